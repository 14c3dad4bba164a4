//! Channels over real TCP on 127.0.0.1: RouteMesh selection and drain, ClientServer,
//! Fanout, discovery through the Location Store, failure rules, configuration errors, and
//! what the channel macros generate.

mod client_server;
mod config;
mod discovery;
mod failures;
mod fanout;
mod macro_forms;
mod macros;
mod routemesh;
