//! What an operator sees of a running mesh: metrics, health, the objects a node runs and
//! its status stream.

mod dashboard_page;
mod events;
mod health;
mod hosted;
mod metrics;
mod traces;
