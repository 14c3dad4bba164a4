//! The verification items of seeds 000 §5 and 002 §10, one named test each, through the
//! public surface only (start methods, returned kinds and outcomes, Location Store record
//! reads, session binding state), over real TCP and a real `redis-server`. Each test
//! starts with the seed sentence it checks.

mod seed_000_s5;
mod seed_002_s10;
