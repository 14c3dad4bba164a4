//! The ZMTP 3 greeting and NULL-mechanism handshake, PUB side.

use bytes::{BufMut, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::frame::{put_frame, read_frame, COMMAND};

/// Our greeting: signature, version 3.0 (so subscribers send subscriptions as messages;
/// commands are understood too), mechanism NULL, as-server 0, filler.
fn greeting() -> [u8; 64] {
    let mut g = [0u8; 64];
    g[0] = 0xFF;
    g[9] = 0x7F;
    g[10] = 3;
    g[11] = 0;
    g[12..16].copy_from_slice(b"NULL");
    g
}

fn invalid(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string())
}

/// Runs the handshake; fails unless the peer is a ZMTP 3 SUB or XSUB with NULL security.
pub(crate) async fn accept<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
) -> std::io::Result<()> {
    stream.write_all(&greeting()).await?;
    let mut peer = [0u8; 64];
    stream.read_exact(&mut peer).await?;
    if peer[0] != 0xFF || peer[9] & 0x01 != 0x01 {
        return Err(invalid("not a ZMTP greeting"));
    }
    if peer[10] < 3 {
        return Err(invalid("ZMTP version below 3"));
    }
    if &peer[12..16] != b"NULL" {
        return Err(invalid("only the NULL mechanism is supported"));
    }
    let mut ready = BytesMut::new();
    let mut body = BytesMut::new();
    body.put_u8(5);
    body.put_slice(b"READY");
    body.put_u8(11);
    body.put_slice(b"Socket-Type");
    body.put_u32(3);
    body.put_slice(b"PUB");
    put_frame(&mut ready, COMMAND, &body);
    stream.write_all(&ready).await?;
    let command = read_frame(stream).await?;
    if command.flags & COMMAND == 0 {
        return Err(invalid("expected READY"));
    }
    let socket_type = ready_socket_type(&command.body).ok_or_else(|| invalid("malformed READY"))?;
    if socket_type != b"SUB" && socket_type != b"XSUB" {
        return Err(invalid("peer is not a SUB socket"));
    }
    Ok(())
}

/// The `Socket-Type` property of a READY command body.
fn ready_socket_type(body: &[u8]) -> Option<&[u8]> {
    let name_len = usize::from(*body.first()?);
    if body.get(1..1 + name_len)? != b"READY" {
        return None;
    }
    let mut rest = body.get(1 + name_len..)?;
    while !rest.is_empty() {
        let key_len = usize::from(rest[0]);
        let key = rest.get(1..1 + key_len)?;
        let len_at = 1 + key_len;
        let value_len = u32::from_be_bytes(rest.get(len_at..len_at + 4)?.try_into().ok()?) as usize;
        let value = rest.get(len_at + 4..len_at + 4 + value_len)?;
        if key.eq_ignore_ascii_case(b"Socket-Type") {
            return Some(value);
        }
        rest = rest.get(len_at + 4 + value_len..)?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_properties_are_parsed_without_trusting_lengths() {
        let mut body = vec![5];
        body.extend_from_slice(b"READY");
        body.push(8);
        body.extend_from_slice(b"Identity");
        body.extend_from_slice(&0u32.to_be_bytes());
        body.push(11);
        body.extend_from_slice(b"Socket-Type");
        body.extend_from_slice(&3u32.to_be_bytes());
        body.extend_from_slice(b"SUB");
        assert_eq!(ready_socket_type(&body), Some(&b"SUB"[..]));
        let truncated = &body[..body.len() - 2];
        assert_eq!(ready_socket_type(truncated), None);
        assert_eq!(ready_socket_type(&[200]), None);
    }
}
