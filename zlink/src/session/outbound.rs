//! One session's outbound queue: encoded packets waiting for the writer, bounded in bytes.
//! A sender waits for room at most its send timeout; a client that does not read for
//! that long is closed with a reason, so one stuck client costs its own queue and
//! nothing else.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::Notify;

use super::packet::{
    CloseReason, ClosingNotice, StreamCodec, WireKind, WirePacket, SESSION_CLOSING,
};
use crate::{Error, ErrorKind, Result};

/// Why the queue refuses a packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Over its byte bound.
    Full,
    /// The session is closing or closed.
    Closed(CloseReason),
}

struct State {
    queue: VecDeque<Bytes>,
    bytes: usize,
    /// Set once: what ends the session. The closing notice is the queue's last packet.
    closing: Option<CloseReason>,
    /// The closing notice's diagnostic, once closing.
    diagnostic: String,
}

pub(crate) struct Outbound {
    state: Mutex<State>,
    max_bytes: usize,
    writer: Notify,
    room: Notify,
    /// Cancelled when closing starts.
    closing_started: tokio_util::sync::CancellationToken,
}

impl Outbound {
    pub(crate) fn new(max_bytes: usize) -> Self {
        Outbound {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                bytes: 0,
                closing: None,
                diagnostic: String::new(),
            }),
            max_bytes,
            writer: Notify::new(),
            room: Notify::new(),
            closing_started: tokio_util::sync::CancellationToken::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `packet` if there is room. A packet larger than the whole bound is taken
    /// into an empty queue, so a large reply is slow rather than impossible.
    pub(crate) fn try_push(&self, packet: Bytes) -> std::result::Result<(), Refused> {
        let mut state = self.lock();
        if let Some(reason) = state.closing {
            return Err(Refused::Closed(reason));
        }
        if state.bytes > 0 && state.bytes + packet.len() > self.max_bytes {
            return Err(Refused::Full);
        }
        state.bytes += packet.len();
        state.queue.push_back(packet);
        drop(state);
        self.writer.notify_one();
        Ok(())
    }

    /// Queues `packet`, waiting at most `timeout` for room. A client that has not made
    /// room by then is closed (`TransportError`): it does not read what it is sent.
    pub(crate) async fn push(&self, packet: Bytes, timeout: Duration) -> Result<()> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let room = self.room.notified();
            match self.try_push(packet.clone()) {
                Ok(()) => return Ok(()),
                Err(Refused::Closed(reason)) => return Err(closed_error(reason)),
                Err(Refused::Full) => {}
            }
            if tokio::time::timeout_at(deadline, room).await.is_err() {
                let queued = self.lock().bytes;
                let detail = format!(
                    "the client has not read for {} ms with {queued} bytes queued for it (at most {})",
                    timeout.as_millis(),
                    self.max_bytes
                );
                self.close(CloseReason::TransportError, &detail);
                return Err(Error::new(ErrorKind::DeadlineExceeded, detail));
            }
        }
    }

    /// Starts closing: nothing more is queued, the closing notice goes last. Returns
    /// whether this call started it (the first reason wins).
    pub(crate) fn close(&self, reason: CloseReason, diagnostic: &str) -> bool {
        let mut state = self.lock();
        if state.closing.is_some() {
            return false;
        }
        state.closing = Some(reason);
        state.diagnostic = diagnostic.to_string();
        let notice = WirePacket::new(
            WireKind::Control,
            StreamCodec::Raw,
            SESSION_CLOSING,
            ClosingNotice::encode(reason, diagnostic),
        );
        if let Ok(bytes) = super::packet::encode_packet(&notice) {
            state.bytes += bytes.len();
            state.queue.push_back(bytes);
        }
        drop(state);
        self.writer.notify_one();
        self.room.notify_waiters();
        self.closing_started.cancel();
        true
    }

    /// Resolves once closing started.
    pub(crate) async fn closing_started(&self) {
        self.closing_started.cancelled().await
    }

    /// What ends the session, once closing started.
    pub(crate) fn closing(&self) -> Option<CloseReason> {
        self.lock().closing
    }

    /// What ends the session and its diagnostic, once closing started.
    pub(crate) fn closing_notice(&self) -> Option<(CloseReason, String)> {
        let state = self.lock();
        state
            .closing
            .map(|reason| (reason, state.diagnostic.clone()))
    }

    /// The writer's wait: moves queued packets into `batch` (at least one, unless the
    /// queue is closed and empty: then `false`, the writer is done).
    pub(crate) async fn next_batch(&self, batch: &mut Vec<Bytes>, max_bytes: usize) -> bool {
        loop {
            let wake = self.writer.notified();
            {
                let mut state = self.lock();
                let mut taken = 0;
                while let Some(packet) = state.queue.front() {
                    if !batch.is_empty() && taken + packet.len() > max_bytes {
                        break;
                    }
                    taken += packet.len();
                    if let Some(packet) = state.queue.pop_front() {
                        batch.push(packet);
                    }
                }
                state.bytes -= taken;
                if !batch.is_empty() {
                    drop(state);
                    self.room.notify_waiters();
                    return true;
                }
                if state.closing.is_some() {
                    return false;
                }
            }
            wake.await;
        }
    }

    #[cfg(test)]
    pub(crate) fn queued_bytes(&self) -> usize {
        self.lock().bytes
    }
}

/// The error a call on a closed session gets.
pub(crate) fn closed_error(reason: CloseReason) -> Error {
    Error::new(
        ErrorKind::Unavailable,
        format!("the session is closed ({reason:?})"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_queue_nobody_drains_closes_the_session_after_the_send_timeout() {
        let queue = Outbound::new(100);
        queue.try_push(Bytes::from(vec![0u8; 80])).expect("room");
        assert_eq!(
            queue.try_push(Bytes::from(vec![0u8; 40])),
            Err(Refused::Full)
        );
        let error = queue
            .push(Bytes::from(vec![0u8; 40]), Duration::from_millis(20))
            .await
            .expect_err("nobody reads");
        assert!(error.is(ErrorKind::DeadlineExceeded), "{error}");
        assert_eq!(queue.closing(), Some(CloseReason::TransportError));
        assert!(matches!(
            queue.try_push(Bytes::from_static(b"x")),
            Err(Refused::Closed(CloseReason::TransportError))
        ));
    }

    #[tokio::test]
    async fn the_closing_notice_is_the_last_packet_the_writer_takes() {
        let queue = Outbound::new(1000);
        queue.try_push(Bytes::from_static(b"a")).expect("room");
        assert!(queue.close(CloseReason::ServerDrain, "bye"));
        assert!(!queue.close(CloseReason::ClientClose, "second"));
        let mut batch = Vec::new();
        assert!(queue.next_batch(&mut batch, 1 << 20).await);
        assert_eq!(batch.len(), 2);
        assert_eq!(&batch[0][..], b"a");
        assert_eq!(queue.queued_bytes(), 0);
        batch.clear();
        assert!(!queue.next_batch(&mut batch, 1 << 20).await);
    }
}
