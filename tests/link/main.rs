//! The link layer and the wire: hostile peers against every listener, the wire decoders
//! fuzzed, CURVE, and interop with libzmq (pyzmq) clients.

mod attacks;
mod curve;
mod interop;
mod logged_failures;
mod wire_decoders;
mod wire_promises;
