//! [`PacketKind`]: whether a call wants a reply.

/// Whether a packet is handled as a request (with a reply) or a one-way send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PacketKind {
    /// Request: the handler's result is sent back as the reply.
    Request,
    /// One-way send: the handler's result is only logged.
    Send,
}
