//! What one session's parts share: its outbound queue, the requests it has not answered,
//! its limits, and the token that ends its tasks.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use super::outbound::Outbound;
use super::packet::{encode_packet, CloseReason, StreamCodec, WireKind, WirePacket};
use crate::{Error, ErrorKind, Result};

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
    pub(crate) bindings: super::session_bindings::Bindings,
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
