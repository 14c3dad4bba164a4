//! STREAM sessions: outside clients over real TCP and WebSocket on 127.0.0.1, driven by the
//! testkit's independent STREAM client.

mod attacks;
mod basics;
mod bound_actor;
mod bound_relocation;
mod bound_spot;
mod common;
mod interop;
mod interop_bound;
mod join_move_push;
mod macro_forms;
mod promises;
mod relay_order;
mod tls;
mod websocket;
