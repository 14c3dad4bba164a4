//! What an operator sees of a running mesh: metrics, health and the objects a node runs.

mod health;
mod hosted;
mod metrics;
