//! The `zone-world` example's pieces: a world of four zones served by Spots on two zone
//! nodes, players as Actors that move between them with their connection, bots, and an
//! operations view.
//!
//! - [`world`]: the grid, the zones, their border bands and the move rules;
//! - [`snapshots`]: what a zone sees of its neighbours' border bands;
//! - [`patrol`]: how the 8 bots walk.

pub mod patrol;
pub mod snapshots;
pub mod world;
