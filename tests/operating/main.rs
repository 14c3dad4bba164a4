//! What an operator sees of a running mesh: metrics.

mod metrics;
