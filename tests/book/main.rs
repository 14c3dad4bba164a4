//! The book's chapters, run: every code block a chapter shows is included from these
//! modules, so what the book teaches compiles and passes.

mod actors;
mod channels;
mod guarantees;
mod includes;
mod instance_spots;
mod location_store;
mod multicast;
mod operating;
mod relocation;
mod restarts;
mod security;
mod sessions;
mod spot_wide;
mod spots;
mod test_cluster;
mod timers;
