//! What an operator sees of a running mesh: metrics and health.

mod health;
mod metrics;
