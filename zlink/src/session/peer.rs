//! What one session's parts share: its outbound queue, the requests it has not answered,
//! its limits, and the token that ends its tasks; and the [`ReplyToken`] of one client
//! request, consumed by its first terminal result, so the client gets exactly one Response
//! or Error for its `request_seq`. A token dropped unanswered answers an Error itself;
//! once the session is closed nothing is written.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use super::answer_order::{Answer, AnswerLines, OrderedReply};
use super::outbound::Outbound;
use super::packet::{encode_packet, CloseReason, StreamCodec, WireKind, WirePacket};
use crate::{Error, ErrorKind, Message, Result};

/// A session's number, unique within its process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(pub(crate) u64);

impl SessionId {
    pub(crate) fn next() -> SessionId {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        SessionId(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }

    /// The number.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "session-{}", self.0)
    }
}

struct Slot {
    /// Its handler is running: a token dropped now is answered by the lane.
    in_handler: bool,
    dropped: bool,
}

/// What became of a request's token once its handler returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AfterHandler {
    /// It was answered.
    Answered,
    /// It was dropped unanswered: the lane answers.
    Dropped,
    /// It lives on (moved into a relay or a task), unanswered.
    Alive,
}

pub(crate) struct SessionPeer {
    pub(crate) id: SessionId,
    pub(crate) listener: String,
    pub(crate) remote: Option<SocketAddr>,
    pub(crate) local: Option<SocketAddr>,
    pub(crate) outbound: Outbound,
    pub(crate) send_timeout: Duration,
    /// How long a sealed binding waits for its new route.
    pub(crate) seal_timeout: Duration,
    /// Request sequences read and not yet answered.
    pending: Mutex<HashMap<u64, Slot>>,
    /// Ends the session's tasks (the socket is dropped with them).
    pub(crate) ended: CancellationToken,
    /// The node's object layer, which binds and relays.
    pub(crate) objects: Option<std::sync::Weak<crate::object::ObjectServer>>,
    /// The Actors this session is bound to.
    pub(crate) bindings: super::session_bindings::Bindings<OrderedReply<ReplyToken>>,
    /// The order in which relayed requests' answers are written, per Actor.
    pub(crate) answer_lines: Arc<AnswerLines>,
    /// The last session sequence given to a relayed message.
    pub(crate) session_seq: std::sync::atomic::AtomicU64,
    /// Bindings that moved to another session, for the lane's callback.
    replaced: Mutex<Vec<crate::address::ActorRef>>,
    replaced_notice: tokio::sync::Notify,
    /// Set once a binding moved away: the session takes no more application packets.
    closing_replaced: std::sync::atomic::AtomicBool,
}

impl SessionPeer {
    pub(crate) fn new(
        listener: &str,
        remote: Option<SocketAddr>,
        local: Option<SocketAddr>,
        limits: &super::StreamLimits,
        objects: Option<std::sync::Weak<crate::object::ObjectServer>>,
    ) -> Self {
        SessionPeer {
            id: SessionId::next(),
            listener: listener.to_string(),
            remote,
            local,
            outbound: Outbound::new(limits.outbound_bytes),
            send_timeout: limits.send_timeout,
            seal_timeout: limits.relocation_seal_timeout,
            pending: Mutex::new(HashMap::new()),
            ended: CancellationToken::new(),
            objects,
            bindings: super::session_bindings::Bindings::default(),
            answer_lines: Arc::default(),
            session_seq: std::sync::atomic::AtomicU64::new(0),
            replaced: Mutex::new(Vec::new()),
            replaced_notice: tokio::sync::Notify::new(),
            closing_replaced: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// A binding of this session moved to another session: the lane runs the callback.
    pub(crate) fn binding_replaced(&self, actor: crate::address::ActorRef) {
        self.closing_replaced
            .store(true, std::sync::atomic::Ordering::Release);
        self.replaced
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(actor);
        self.replaced_notice.notify_one();
    }

    /// Waits for a replaced binding's notice.
    pub(crate) async fn replaced_notice(&self) {
        self.replaced_notice.notified().await
    }

    /// The bindings that moved away since the last call.
    pub(crate) fn take_replaced(&self) -> Vec<crate::address::ActorRef> {
        std::mem::take(&mut *self.replaced.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Whether a binding moved away (the session is closing).
    pub(crate) fn is_replaced(&self) -> bool {
        self.closing_replaced
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// The route of this session's binding to `actor`, if bound.
    pub(crate) fn binding(&self, actor: &str) -> Option<crate::object::binding::BindingRoute> {
        self.bindings.get(actor)
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Slot>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes `seq` as pending, its handler about to run; `false` when a request with it
    /// is pending already.
    pub(crate) fn open_request(&self, seq: u64) -> bool {
        use std::collections::hash_map::Entry;
        match self.pending().entry(seq) {
            Entry::Occupied(_) => false,
            Entry::Vacant(slot) => {
                slot.insert(Slot {
                    in_handler: true,
                    dropped: false,
                });
                true
            }
        }
    }

    /// Whether a request with `seq` is pending.
    pub(crate) fn is_pending(&self, seq: u64) -> bool {
        self.pending().contains_key(&seq)
    }

    /// Ends `seq`: `true` for the first terminal result, `false` after it.
    pub(crate) fn finish_request(&self, seq: u64) -> bool {
        self.pending().remove(&seq).is_some()
    }

    /// A token dropped unanswered: `true` when the dropper answers now, `false` when its
    /// handler is still running (the lane answers with the handler's result).
    pub(crate) fn drop_request(&self, seq: u64) -> bool {
        let mut pending = self.pending();
        match pending.get_mut(&seq) {
            Some(slot) if slot.in_handler => {
                slot.dropped = true;
                false
            }
            Some(_) => pending.remove(&seq).is_some(),
            None => false,
        }
    }

    /// After the handler of `seq` returned: what became of its token.
    pub(crate) fn after_handler(&self, seq: u64) -> AfterHandler {
        let mut pending = self.pending();
        match pending.get_mut(&seq) {
            None => AfterHandler::Answered,
            Some(slot) if slot.dropped => {
                pending.remove(&seq);
                AfterHandler::Dropped
            }
            Some(slot) => {
                slot.in_handler = false;
                AfterHandler::Alive
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn pending_requests(&self) -> usize {
        self.pending().len()
    }

    /// Queues `packet`, waiting at most the send timeout (or `timeout`, when shorter).
    pub(crate) async fn send(&self, packet: &WirePacket, timeout: Option<Duration>) -> Result<()> {
        let bytes = encode_packet(packet).map_err(Error::InvalidArgument)?;
        let timeout = timeout.map_or(self.send_timeout, |t| t.min(self.send_timeout));
        self.outbound.push(bytes, timeout).await
    }

    /// An Error packet for request `seq` (or a session-level one without it).
    pub(crate) fn error_packet(seq: Option<u64>, kind: ErrorKind, message: &str) -> WirePacket {
        let body = serde_json::json!({ "code": kind.code(), "message": message });
        let mut packet = WirePacket::new(
            WireKind::Error,
            StreamCodec::Json,
            "",
            Bytes::from(body.to_string()),
        );
        packet.request_seq = seq;
        packet
    }

    /// Starts closing the session with `reason`; its tasks end once the notice is written
    /// (or the linger passes).
    pub(crate) fn close(&self, reason: CloseReason, diagnostic: &str) {
        if self.outbound.close(reason, diagnostic) {
            tracing::debug!(
                listener = %self.listener,
                session = %self.id,
                ?reason,
                diagnostic,
                "session closing"
            );
        }
    }
}

/// Queues an Error packet without waiting: a client whose queue is full is not reading.
pub(crate) fn answer_error(peer: &SessionPeer, seq: Option<u64>, kind: ErrorKind, message: &str) {
    tracing::debug!(session = %peer.id, request_seq = ?seq, %kind, message, "error to the client");
    let packet = SessionPeer::error_packet(seq, kind, message);
    if let Ok(bytes) = encode_packet(&packet) {
        let _ = peer.outbound.try_push(bytes);
    }
}

/// The code and message of an Error packet for `error`.
pub(crate) fn error_parts(error: &Error) -> (ErrorKind, String) {
    match error {
        Error::Failed { kind, detail, .. } => (*kind, detail.clone()),
        other => (ErrorKind::InvalidOperation, other.to_string()),
    }
}

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

impl Answer for ReplyToken {
    async fn answer(self, codec: StreamCodec, result: Result<Bytes>) {
        let _ = match result {
            Ok(reply) => self.reply_bytes(codec, reply).await,
            Err(e) => {
                let (kind, message) = error_parts(&e);
                self.fail(kind, &message).await
            }
        };
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
mod reply_tests {
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
