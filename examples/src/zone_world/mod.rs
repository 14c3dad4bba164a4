//! The `zone-world` example's pieces: a world of four zones served by Spots on two zone
//! nodes, players as Actors that move between them with their connection, bots, and an
//! operations view.
//!
//! - [`world`]: the grid, the zones, their border bands and the move rules;
//! - [`snapshots`]: what a zone sees of its neighbours' border bands;
//! - [`patrol`]: how the 8 bots walk;
//! - [`bots`]: putting the bots into the world;
//! - [`messages`]: what clients, players and zones say;
//! - [`broadcast`]: the board of maintenance and announcements every node follows;
//! - [`desired`]: where maintenance is kept so that it survives restarts;
//! - [`ops`]: the operators' side: setting maintenance, announcing;
//! - [`desk`]: how the ops node drains a zone node;
//! - [`panel`]: the ops view's Zone World panel on the dashboard;
//! - [`zone`]: a zone, a Spot whose members are the players in it;
//! - [`player`]: a player, an Actor that moves with the zone it enters;
//! - [`nodes`]: the zone nodes and which zones each owns;
//! - [`gateway`]: the session type of the gateway's browser listener;
//! - [`launch`]: starting each role's node (zone, gateway, ops) on the embedded stores or
//!   on Redis;
//! - [`one_process`]: the whole world in one process;
//! - [`load`]: the load mode's clients and figures.

pub mod bots;
pub mod broadcast;
pub mod desired;
pub mod desk;
pub mod gateway;
pub mod launch;
pub mod load;
pub mod messages;
pub mod nodes;
pub mod one_process;
pub mod ops;
pub mod panel;
pub mod patrol;
pub mod player;
pub mod snapshots;
pub mod world;
pub mod zone;
