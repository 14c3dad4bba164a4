//! The reply token of one client request: consumed by its first terminal result, so the
//! client gets exactly one Response or Error for its `request_seq`. A token dropped
//! unanswered answers an Error itself; once the session is closed nothing is written.

use std::sync::Arc;

use bytes::Bytes;

use super::packet::{StreamCodec, WireKind, WirePacket};
use super::peer::SessionPeer;
use crate::{Error, ErrorKind, Message, Result};

/// The right to answer one client request, once.
#[must_use = "a request is answered through its token; dropped unanswered, it answers an Error"]
pub struct ReplyToken {
    peer: Arc<SessionPeer>,
    seq: u64,
    answered: bool,
}

impl std::fmt::Debug for ReplyToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplyToken")
            .field("session", &self.peer.id)
            .field("request_seq", &self.seq)
            .finish()
    }
}

impl ReplyToken {
    pub(crate) fn new(peer: Arc<SessionPeer>, seq: u64) -> Self {
        ReplyToken {
            peer,
            seq,
            answered: false,
        }
    }

    /// The client's request sequence this token answers.
    pub fn request_seq(&self) -> u64 {
        self.seq
    }

    /// Answers with `reply` (JSON, or Raw for a raw message). Completes once the
    /// session's queue took it (at most the send timeout).
    pub async fn reply<M: Message>(self, reply: &M) -> Result<()> {
        let codec = super::codec_of::<M>()?;
        self.reply_bytes(codec, reply.encode()?).await
    }

    /// Answers with an encoded payload.
    pub async fn reply_bytes(mut self, codec: StreamCodec, payload: Bytes) -> Result<()> {
        self.answered = true;
        if !self.peer.finish_request(self.seq) {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("request {} is answered already", self.seq),
            ));
        }
        let mut packet = WirePacket::new(WireKind::Response, codec, "", payload);
        packet.request_seq = Some(self.seq);
        self.peer.send(&packet, None).await
    }

    /// Answers with an Error packet: `{"code": kind, "message": message}`.
    pub async fn fail(mut self, kind: ErrorKind, message: &str) -> Result<()> {
        self.answered = true;
        if !self.peer.finish_request(self.seq) {
            return Ok(());
        }
        let packet = SessionPeer::error_packet(Some(self.seq), kind, message);
        self.peer.send(&packet, None).await
    }
}

impl Drop for ReplyToken {
    fn drop(&mut self) {
        if self.answered || !self.peer.drop_request(self.seq) {
            return;
        }
        let packet = SessionPeer::error_packet(
            Some(self.seq),
            ErrorKind::InternalFailure,
            "the session handled the request without answering it",
        );
        if let Ok(bytes) = super::packet::encode_packet(&packet) {
            // Best effort: a full queue belongs to a client that does not read.
            let _ = self.peer.outbound.try_push(bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::session::packet::decode_packet;
    use crate::session::peer::AfterHandler;

    fn peer() -> Arc<SessionPeer> {
        Arc::new(SessionPeer::new(
            "t",
            None,
            None,
            &crate::session::StreamLimits {
                outbound_bytes: 1 << 20,
                send_timeout: Duration::from_secs(1),
                ..Default::default()
            },
            None,
        ))
    }

    /// The packets queued for the client so far.
    async fn written(peer: &SessionPeer) -> Vec<WirePacket> {
        let mut batch = Vec::new();
        if peer.outbound.queued_bytes() > 0 {
            peer.outbound.next_batch(&mut batch, 1 << 20).await;
        }
        batch
            .into_iter()
            .map(|bytes| {
                let header_len = usize::from(u16::from_be_bytes([bytes[0], bytes[1]]));
                decode_packet(bytes.slice(6..), header_len).expect("a packet")
            })
            .collect()
    }

    #[tokio::test]
    async fn a_reply_token_answers_once_and_a_second_answer_is_refused() {
        let peer = peer();
        assert!(peer.open_request(7));
        let token = ReplyToken::new(peer.clone(), 7);
        token
            .reply_bytes(StreamCodec::Raw, Bytes::from_static(b"a"))
            .await
            .expect("first answer");
        assert_eq!(peer.after_handler(7), AfterHandler::Answered);
        assert_eq!(peer.pending_requests(), 0);
        // A second token for the same sequence (a confused relay) finds it answered.
        let late = ReplyToken::new(peer.clone(), 7);
        let refused = late
            .reply_bytes(StreamCodec::Raw, Bytes::from_static(b"b"))
            .await;
        assert!(refused.is_err());
        let packets = written(&peer).await;
        assert_eq!(packets.len(), 1);
        assert_eq!(packets[0].kind, WireKind::Response);
        assert_eq!(packets[0].request_seq, Some(7));
    }

    #[tokio::test]
    async fn a_token_dropped_outside_its_handler_answers_internal_failure_itself() {
        let peer = peer();
        assert!(peer.open_request(3));
        let token = ReplyToken::new(peer.clone(), 3);
        // Handed on (to a task, say): the handler returned with the token alive.
        assert_eq!(peer.after_handler(3), AfterHandler::Alive);
        drop(token);
        let packets = written(&peer).await;
        assert_eq!(packets.len(), 1);
        assert_eq!(packets[0].kind, WireKind::Error);
        assert_eq!(packets[0].request_seq, Some(3));
        assert_eq!(peer.pending_requests(), 0);
    }

    #[tokio::test]
    async fn a_token_dropped_inside_its_handler_leaves_the_answer_to_the_lane() {
        let peer = peer();
        assert!(peer.open_request(4));
        drop(ReplyToken::new(peer.clone(), 4));
        assert!(written(&peer).await.is_empty());
        assert_eq!(peer.after_handler(4), AfterHandler::Dropped);
    }

    #[tokio::test]
    async fn no_answer_is_written_once_the_session_is_closing() {
        let peer = peer();
        assert!(peer.open_request(5));
        let token = ReplyToken::new(peer.clone(), 5);
        peer.close(crate::session::CloseReason::ServerDrain, "bye");
        let late = token
            .reply_bytes(StreamCodec::Raw, Bytes::from_static(b"x"))
            .await;
        assert!(late.is_err(), "a closing session takes no late reply");
        let packets = written(&peer).await;
        assert!(
            packets.iter().all(|p| p.kind == WireKind::Control),
            "only the closing notice: {packets:?}"
        );
    }
}
