//! The Location Store and the Relocation Store: the conformance suites on every provider
//! (in-memory, Redis, Redis Cluster), outages, durability and store-backed membership.

mod cluster;
mod conformance;
mod durability;
mod membership;
mod outage;
mod relocation_conformance;
