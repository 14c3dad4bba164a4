//! Puts messages and commands on the wire as they leave a connection: plain ZMTP frames
//! under NULL, one sealed MESSAGE data frame per frame under CURVE (RFC 26; the outer frame
//! carries no flags, MORE and COMMAND travel inside the box, as libzmq expects).

use bytes::{Bytes, BytesMut};

use super::curve::{CurveSealer, MESSAGE_OVERHEAD};
use super::frame;

/// The encoder of one connection's outbound direction.
pub(crate) struct Outgoing {
    sealer: Option<CurveSealer>,
}

impl Outgoing {
    pub(crate) fn new(sealer: Option<CurveSealer>) -> Self {
        Outgoing { sealer }
    }

    /// Appends a multipart message.
    pub(crate) fn put_message(&mut self, out: &mut BytesMut, frames: &[Bytes]) {
        let Some(sealer) = &mut self.sealer else {
            return frame::put_message(out, frames);
        };
        for (i, body) in frames.iter().enumerate() {
            out.reserve(9 + MESSAGE_OVERHEAD + body.len());
            frame::put_header(out, 0, MESSAGE_OVERHEAD + body.len());
            sealer.seal(i + 1 < frames.len(), false, body, out);
        }
    }

    /// Appends a command (`name` and its data).
    pub(crate) fn put_command(&mut self, out: &mut BytesMut, name: &str, data: &[u8]) {
        let Some(sealer) = &mut self.sealer else {
            return frame::put_command(out, name, data);
        };
        let mut body = Vec::with_capacity(1 + name.len() + data.len());
        body.push(name.len() as u8);
        body.extend_from_slice(name.as_bytes());
        body.extend_from_slice(data);
        frame::put_header(out, 0, MESSAGE_OVERHEAD + body.len());
        sealer.seal(false, true, &body, out);
    }
}
