//! ZMTP frames: a flags byte (MORE 0x01, LONG 0x02, COMMAND 0x04), a 1- or 8-byte size and
//! the body.

use bytes::{BufMut, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

pub(crate) const MORE: u8 = 0x01;
const LONG: u8 = 0x02;
pub(crate) const COMMAND: u8 = 0x04;

/// The largest frame accepted from a subscriber (subscriptions are short).
pub(crate) const MAX_INBOUND_FRAME: u64 = 64 * 1024;

/// Appends one frame to `out`.
pub(crate) fn put_frame(out: &mut BytesMut, flags: u8, body: &[u8]) {
    if body.len() > 255 {
        out.put_u8(flags | LONG);
        out.put_u64(body.len() as u64);
    } else {
        out.put_u8(flags);
        out.put_u8(body.len() as u8);
    }
    out.put_slice(body);
}

/// Appends a multipart message (MORE on every frame but the last).
pub(crate) fn put_message(out: &mut BytesMut, frames: &[Bytes]) {
    for (i, frame) in frames.iter().enumerate() {
        let more = if i + 1 < frames.len() { MORE } else { 0 };
        put_frame(out, more, frame);
    }
}

/// One frame as read from the peer.
pub(crate) struct Frame {
    pub(crate) flags: u8,
    pub(crate) body: Bytes,
}

/// Reads one frame, refusing bodies over [`MAX_INBOUND_FRAME`] before allocating.
pub(crate) async fn read_frame(reader: &mut (impl AsyncRead + Unpin)) -> std::io::Result<Frame> {
    let flags = reader.read_u8().await?;
    let size = if flags & LONG != 0 {
        reader.read_u64().await?
    } else {
        u64::from(reader.read_u8().await?)
    };
    if size > MAX_INBOUND_FRAME {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("frame of {size} bytes from a subscriber"),
        ));
    }
    let mut body = vec![0u8; size as usize];
    reader.read_exact(&mut body).await?;
    Ok(Frame {
        flags,
        body: Bytes::from(body),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_round_trip_short_and_long() {
        let mut out = BytesMut::new();
        let long = vec![7u8; 300];
        put_message(
            &mut out,
            &[Bytes::from_static(b"topic"), Bytes::from(long.clone())],
        );
        assert_eq!(&out[..2], &[MORE, 5]);
        let mut reader = &out[..];
        let first = read_frame(&mut reader).await.expect("frame reads back");
        assert_eq!((first.flags, &first.body[..]), (MORE, &b"topic"[..]));
        let second = read_frame(&mut reader).await.expect("frame reads back");
        assert_eq!((second.flags & MORE, second.body.len()), (0, 300));
    }

    #[tokio::test]
    async fn oversize_inbound_frames_are_refused_before_allocation() {
        let mut out = BytesMut::new();
        out.put_u8(LONG);
        out.put_u64(u64::MAX);
        let mut reader = &out[..];
        assert!(read_frame(&mut reader).await.is_err());
    }
}
