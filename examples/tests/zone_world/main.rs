//! Zone World's scenarios, named after the original's groups: A joins and moves, B border
//! crossings and the generation, C border sync, D announcements, E maintenance, F bots, G operations. They run
//! over TCP on 127.0.0.1 with the stores on a private redis-server (see `world`).

mod a_moves;
mod b_crossings;
mod browser;
mod c_border_sync;
mod d_announcements;
mod e_maintenance;
mod f_bots;
mod g_operations;
mod world;
