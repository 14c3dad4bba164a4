//! ZMTP frames: a flags byte (MORE 0x01, LONG 0x02, COMMAND 0x04), a 1- or 8-byte size and
//! the body. Encoding appends to a buffer; decoding is sans-IO over the bytes read so far,
//! and every declared size is checked against the limit before a byte is reserved for it.

use bytes::{Buf, BufMut, Bytes, BytesMut};

pub(crate) const MORE: u8 = 0x01;
const LONG: u8 = 0x02;
pub(crate) const COMMAND: u8 = 0x04;

/// The most a reader reserves ahead of the bytes that actually arrived.
pub(crate) const READ_CHUNK: usize = 64 * 1024;

/// Appends one frame to `out`.
pub(crate) fn put_frame(out: &mut BytesMut, flags: u8, body: &[u8]) {
    put_header(out, flags, body.len());
    out.put_slice(body);
}

/// Appends a frame header announcing `len` body bytes.
pub(crate) fn put_header(out: &mut BytesMut, flags: u8, len: usize) {
    if len > 255 {
        out.put_u8(flags | LONG);
        out.put_u64(len as u64);
    } else {
        out.put_u8(flags);
        out.put_u8(len as u8);
    }
}

/// Appends a multipart message (MORE on every frame but the last).
pub(crate) fn put_message(out: &mut BytesMut, frames: &[Bytes]) {
    for (i, frame) in frames.iter().enumerate() {
        let more = if i + 1 < frames.len() { MORE } else { 0 };
        put_frame(out, more, frame);
    }
}

/// Appends a command frame: the name (length-prefixed) and its data.
pub(crate) fn put_command(out: &mut BytesMut, name: &str, data: &[u8]) {
    put_header(out, COMMAND, 1 + name.len() + data.len());
    out.put_u8(name.len() as u8);
    out.put_slice(name.as_bytes());
    out.put_slice(data);
}

/// One frame as read from the peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Frame {
    pub(crate) flags: u8,
    /// The body, still the only view of its bytes (a CURVE frame is opened in place).
    pub(crate) body: BytesMut,
}

impl Frame {
    pub(crate) fn more(&self) -> bool {
        self.flags & MORE != 0
    }

    pub(crate) fn is_command(&self) -> bool {
        self.flags & COMMAND != 0
    }

    /// The command name and data of a command frame.
    pub(crate) fn command(&self) -> Option<(&[u8], &[u8])> {
        split_command(&self.body)
    }
}

/// Splits a command body into its name and data.
pub(crate) fn split_command(body: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = usize::from(*body.first()?);
    Some((body.get(1..1 + len)?, body.get(1 + len..)?))
}

/// Why a peer's bytes are not acceptable ZMTP.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FrameError {
    /// A frame declared more bytes than the connection accepts.
    #[error("frame of {size} bytes exceeds the limit of {max} bytes")]
    TooLarge { size: u64, max: usize },
    /// Reserved flag bits were set, or a command claimed MORE.
    #[error("invalid frame flags {0:#04x}")]
    BadFlags(u8),
    /// A message had more frames than allowed.
    #[error("message of more than {0} frames")]
    TooManyFrames(usize),
    /// A message's frames add up to more than allowed.
    #[error("message of more than {0} bytes")]
    MessageTooLarge(usize),
}

/// Decodes frames from a byte buffer, refusing any frame over `max_frame` bytes as soon as
/// its header has arrived.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FrameDecoder {
    pub(crate) max_frame: usize,
}

impl FrameDecoder {
    /// Takes one complete frame off the front of `buf`; `Ok(None)` when more bytes are
    /// needed (and at most [`READ_CHUNK`] more have been reserved for them).
    pub(crate) fn decode(&self, buf: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        let Some(&flags) = buf.first() else {
            return Ok(None);
        };
        if flags & !(MORE | LONG | COMMAND) != 0 || (flags & COMMAND != 0 && flags & MORE != 0) {
            return Err(FrameError::BadFlags(flags));
        }
        let (header, size) = if flags & LONG != 0 {
            let Some(size) = buf.get(1..9) else {
                return Ok(None);
            };
            let mut raw = [0u8; 8];
            raw.copy_from_slice(size);
            (9, u64::from_be_bytes(raw))
        } else {
            match buf.get(1) {
                Some(&size) => (2, u64::from(size)),
                None => return Ok(None),
            }
        };
        if size > self.max_frame as u64 {
            return Err(FrameError::TooLarge {
                size,
                max: self.max_frame,
            });
        }
        let total = header + size as usize;
        if buf.len() < total {
            buf.reserve((total - buf.len()).min(READ_CHUNK));
            return Ok(None);
        }
        buf.advance(header);
        let body = buf.split_to(size as usize);
        Ok(Some(Frame {
            flags: flags & (MORE | COMMAND),
            body,
        }))
    }
}

/// Collects data frames into messages under a frame count and a byte budget.
#[derive(Debug)]
pub(crate) struct MessageAssembler {
    max_frames: usize,
    max_bytes: usize,
    frames: Vec<Bytes>,
    bytes: usize,
}

impl MessageAssembler {
    pub(crate) fn new(max_frames: usize, max_bytes: usize) -> Self {
        MessageAssembler {
            max_frames: max_frames.max(1),
            max_bytes,
            frames: Vec::new(),
            bytes: 0,
        }
    }

    /// Bytes the message being assembled may still take (all of the budget between
    /// messages).
    pub(crate) fn remaining(&self) -> usize {
        self.max_bytes.saturating_sub(self.bytes)
    }

    /// Changes the byte budget of messages (admission raises it).
    pub(crate) fn set_max_bytes(&mut self, max_bytes: usize) {
        self.max_bytes = max_bytes;
    }

    /// Adds one data frame; returns the message when it was the last one.
    pub(crate) fn push(
        &mut self,
        more: bool,
        body: Bytes,
    ) -> Result<Option<Vec<Bytes>>, FrameError> {
        if self.frames.len() >= self.max_frames {
            return Err(FrameError::TooManyFrames(self.max_frames));
        }
        self.bytes += body.len();
        if self.bytes > self.max_bytes {
            return Err(FrameError::MessageTooLarge(self.max_bytes));
        }
        self.frames.push(body);
        if more {
            return Ok(None);
        }
        self.bytes = 0;
        Ok(Some(std::mem::take(&mut self.frames)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decoder(max: usize) -> FrameDecoder {
        FrameDecoder { max_frame: max }
    }

    #[test]
    fn frames_round_trip_short_and_long() {
        let mut out = BytesMut::new();
        let long = vec![7u8; 300];
        put_message(
            &mut out,
            &[Bytes::from_static(b"topic"), Bytes::from(long.clone())],
        );
        assert_eq!(&out[..2], &[MORE, 5]);
        let first = decoder(1024)
            .decode(&mut out)
            .expect("valid")
            .expect("whole");
        assert_eq!((first.flags, &first.body[..]), (MORE, &b"topic"[..]));
        let second = decoder(1024)
            .decode(&mut out)
            .expect("valid")
            .expect("whole");
        assert_eq!((second.flags & MORE, second.body.len()), (0, 300));
        assert!(out.is_empty());
    }

    #[test]
    fn a_length_bomb_is_refused_from_its_header_without_reserving() {
        let mut out = BytesMut::new();
        out.put_u8(LONG);
        out.put_u64(1 << 46);
        let capacity = out.capacity();
        assert_eq!(
            decoder(16 << 20).decode(&mut out),
            Err(FrameError::TooLarge {
                size: 1 << 46,
                max: 16 << 20
            })
        );
        assert_eq!(out.capacity(), capacity);
    }

    #[test]
    fn a_partial_frame_reserves_at_most_one_read_chunk() {
        let mut out = BytesMut::new();
        put_header(&mut out, 0, 10 << 20);
        out.put_slice(&[1, 2, 3]);
        assert_eq!(decoder(16 << 20).decode(&mut out), Ok(None));
        assert!(out.capacity() <= 9 + 3 + READ_CHUNK + 64);
    }

    #[test]
    fn reserved_flags_and_commands_with_more_are_refused() {
        let mut out = BytesMut::from(&[0x08u8, 0][..]);
        assert_eq!(
            decoder(10).decode(&mut out),
            Err(FrameError::BadFlags(0x08))
        );
        let mut out = BytesMut::from(&[COMMAND | MORE, 0][..]);
        assert!(decoder(10).decode(&mut out).is_err());
    }

    #[test]
    fn the_assembler_caps_frames_and_bytes() {
        let mut a = MessageAssembler::new(2, 10);
        assert_eq!(a.push(true, Bytes::from_static(b"ab")), Ok(None));
        assert_eq!(
            a.push(false, Bytes::from_static(b"cd")),
            Ok(Some(vec![
                Bytes::from_static(b"ab"),
                Bytes::from_static(b"cd")
            ]))
        );
        let mut a = MessageAssembler::new(2, 10);
        a.push(true, Bytes::new()).expect("first frame fits");
        a.push(true, Bytes::new()).expect("second frame fits");
        assert_eq!(
            a.push(false, Bytes::new()),
            Err(FrameError::TooManyFrames(2))
        );
        let mut a = MessageAssembler::new(8, 10);
        a.push(true, Bytes::from(vec![0; 6])).expect("fits");
        assert_eq!(
            a.push(false, Bytes::from(vec![0; 6])),
            Err(FrameError::MessageTooLarge(10))
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 40_000, ..ProptestConfig::default() })]

        /// Arbitrary bytes, fed in arbitrary pieces, never panic the decoder and never make
        /// it hold more than the limit plus one read chunk.
        #[test]
        fn frame_decoder_survives_arbitrary_input(
            bytes in proptest::collection::vec(any::<u8>(), 0..600),
            cut in 0usize..600,
            max in 0usize..512,
        ) {
            let dec = decoder(max);
            let mut assembler = MessageAssembler::new(4, max);
            let mut buf = BytesMut::new();
            let cut = cut.min(bytes.len());
            for piece in [&bytes[..cut], &bytes[cut..]] {
                buf.extend_from_slice(piece);
                while let Ok(Some(frame)) = dec.decode(&mut buf) {
                    prop_assert!(frame.body.len() <= max);
                    if !frame.is_command() && assembler.push(frame.more(), frame.body.freeze()).is_err() {
                        break;
                    }
                }
                prop_assert!(buf.capacity() <= bytes.len() + max + READ_CHUNK + 64);
            }
        }
    }
}
