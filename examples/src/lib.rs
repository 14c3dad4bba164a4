//! Runnable zlink examples.
//!
//! The `mesh-demo` binary (`src/main.rs`) is built from the pieces in this library, which
//! the book includes region by region (look for the `ANCHOR:` comments):
//!
//! - [`messages`]: the typed messages of the `greet` channel;
//! - [`greeter`]: the server side, a handler group built from closures;
//! - [`nodes`]: starting server and client nodes and waiting for what they see;
//! - [`cli`]: the hand-written flag parser of `mesh-demo`;
//! - [`setup`]: what every example binary shares: logging, `--help`, CURVE flags;
//! - [`operate`]: `--metrics` and `--dashboard`, what an operator sees of the nodes;
//! - [`otlp`]: `--otlp`, the spans exported to an OpenTelemetry collector;
//! - [`logged_in`]: the gateways' relay of a logged-in client's packets to its player;
//! - [`json_state`]: the state an example's object keeps across a move, as JSON;
//! - [`page_server`]: serving an example's browser page with the JavaScript client;
//! - [`chat`]: the `gateway-chat` binary's pieces: outside clients bound to Actors;
//! - [`zone_world`]: the `zone-world` binary's pieces: a zone-sharded world whose players
//!   keep their connection while the servers move them.
#![warn(missing_docs)]

pub mod chat;
pub mod cli;
pub mod greeter;
pub mod json_state;
pub mod logged_in;
pub mod messages;
pub mod nodes;
pub mod operate;
pub mod otlp;
pub mod page_server;
pub mod setup;
pub mod zone_world;
