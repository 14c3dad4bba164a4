//! The book's chapters, run: every code block a chapter shows is compiled into these
//! modules from the chapter itself (`zlink_book_snippets::snippet!`), so what the book
//! teaches compiles and passes.

mod actors;
mod book_code;
mod channels;
mod getting_started;
mod guarantees;
mod instance_spots;
mod location_store;
mod multicast;
mod operating;
mod performance;
mod relocation;
mod restarts;
mod room_broadcast;
mod security;
mod sessions;
mod spot_wide;
mod spots;
mod test_cluster;
mod timers;
mod wire_bytes;
