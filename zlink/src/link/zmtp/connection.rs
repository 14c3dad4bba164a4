//! One established ZMTP connection: a reader task that decodes under the limits and hands
//! whole messages to the [`LinkEvents`], and a writer task that drains a bounded queue in
//! batches. Closing it closes exactly its TCP connection.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::curve::{CurveOpener, MESSAGE_OVERHEAD};
use super::frame::{split_command, FrameDecoder, MessageAssembler};
use super::handshake::Established;
use super::listener::Slot;
use super::outgoing::Outgoing;
use crate::link::security::CurvePublicKey;
use crate::link::transport::{
    next_conn_id, ConnId, Connection, Frames, LinkError, LinkEvents, TrySendError,
};
use crate::link::LinkLimits;

/// What a reader keeps free for the next read. Small, so thousands of idle connections
/// cost little; a frame that needs more grows the buffer as its bytes arrive.
const READ_SPARE: usize = 8 * 1024;

/// The largest frame or message accepted before admission: a hello and its admission
/// record, never a payload. Unadmitted strangers cannot make a listener buffer more.
const PRE_ADMISSION_MAX: usize = 256 * 1024;

/// Room a frame always has, even when the message being assembled is at its byte budget:
/// enough for any ZMTP command.
const COMMAND_ROOM: usize = 512;

/// Messages a writer encodes into one socket write, at most.
const WRITE_BATCH: usize = 256;
/// Bytes a writer gathers before writing, at most (one large message may exceed it).
const WRITE_BATCH_BYTES: usize = 256 * 1024;

enum Queued {
    Message(Frames, OwnedSemaphorePermit),
    /// A ZMTP command (e.g. PONG): name and data.
    Command(&'static str, Bytes),
}

/// An established connection.
pub(crate) struct ZmtpConnection {
    id: ConnId,
    queue: mpsc::Sender<Queued>,
    queued_bytes: Arc<Semaphore>,
    byte_cap: usize,
    cancel: CancellationToken,
    closed: AtomicBool,
    admitted: AtomicBool,
    admitted_signal: tokio::sync::Notify,
    peer_key: Option<CurvePublicKey>,
    events: Option<Arc<dyn LinkEvents>>,
    slot: Option<Slot>,
}

/// Where a connection's inbound messages go.
pub(crate) enum Delivery {
    /// Handed to the link events as they complete (the mesh decodes and dispatches).
    Events(Arc<dyn LinkEvents>),
    /// Into a bounded channel: a full channel stops the reads, so a slow consumer pushes
    /// back on the sender (fanout subscribers).
    Channel(mpsc::Sender<Frames>),
}

/// What a connection needs besides its stream.
pub(crate) struct Setup {
    pub(crate) limits: LinkLimits,
    pub(crate) delivery: Delivery,
    /// Cancelled when the listener that accepted the connection closes.
    pub(crate) parent: Option<CancellationToken>,
    /// The listener's accounting, for accepted connections.
    pub(crate) slot: Option<Slot>,
    /// When admission must be complete (accepted connections: accept + handshake timeout).
    pub(crate) admit_by: Option<Instant>,
}

impl ZmtpConnection {
    /// Starts the reader and writer of an established connection.
    pub(crate) fn spawn(stream: TcpStream, established: Established, setup: Setup) -> Arc<Self> {
        let _ = stream.set_nodelay(true);
        let (read, write) = stream.into_split();
        let (sealer, opener) = match established.cipher {
            Some(session) => {
                let (s, o) = session.split();
                (Some(s), Some(o))
            }
            None => (None, None),
        };
        let (tx, rx) = mpsc::channel(setup.limits.send_queue_messages.max(1));
        // One message takes at most u32::MAX permits; the queue never holds more than that.
        let byte_cap = setup.limits.send_queue_bytes.clamp(1, u32::MAX as usize);
        // The events also hear when the connection ends.
        let events = match &setup.delivery {
            Delivery::Events(events) => Some(events.clone()),
            Delivery::Channel(_) => None,
        };
        let conn = Arc::new(ZmtpConnection {
            id: next_conn_id(),
            queue: tx,
            queued_bytes: Arc::new(Semaphore::new(byte_cap)),
            byte_cap,
            cancel: setup
                .parent
                .map_or_else(CancellationToken::new, |p| p.child_token()),
            closed: AtomicBool::new(false),
            admitted: AtomicBool::new(setup.admit_by.is_none()),
            admitted_signal: tokio::sync::Notify::new(),
            peer_key: established.peer_key,
            events,
            slot: setup.slot,
        });
        let reader = Reader {
            conn: conn.clone(),
            read,
            buf: established.leftover,
            decoder: FrameDecoder { max_frame: 0 },
            overhead: if opener.is_some() {
                MESSAGE_OVERHEAD
            } else {
                0
            },
            max_message: setup.limits.max_message,
            assembler: MessageAssembler::new(setup.limits.max_frames, setup.limits.max_message),
            opener,
            admit_by: setup.admit_by,
            delivery: setup.delivery,
        };
        tokio::spawn(reader.run());
        let writer = Writer {
            conn: Arc::downgrade(&conn),
            cancel: conn.cancel.clone(),
            write,
            rx,
            outgoing: Outgoing::new(sealer),
        };
        tokio::spawn(writer.run());
        conn
    }

    /// Ends the connection once: both tasks stop, the socket closes, the events hear of it.
    fn shut(&self, reason: &'static str) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        tracing::debug!(conn = self.id, reason, "zmtp connection closed");
        self.cancel.cancel();
        if let Some(slot) = &self.slot {
            slot.release();
        }
        if let Some(events) = &self.events {
            events.on_closed(self.id);
        }
    }
}

#[async_trait]
impl Connection for ZmtpConnection {
    fn id(&self) -> ConnId {
        self.id
    }

    async fn send(&self, frames: Frames) -> Result<(), LinkError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(LinkError::Closed);
        }
        let size: usize = frames.iter().map(Bytes::len).sum();
        let permits = size.clamp(1, self.byte_cap) as u32;
        let permit = self
            .queued_bytes
            .clone()
            .acquire_many_owned(permits)
            .await
            .map_err(|_| LinkError::Closed)?;
        self.queue
            .send(Queued::Message(frames, permit))
            .await
            .map_err(|_| LinkError::Closed)
    }

    fn try_send(&self, frames: Frames) -> Result<(), TrySendError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(TrySendError::Closed);
        }
        let size: usize = frames.iter().map(Bytes::len).sum();
        let permits = size.clamp(1, self.byte_cap) as u32;
        let permit = match self.queued_bytes.clone().try_acquire_many_owned(permits) {
            Ok(permit) => permit,
            Err(tokio::sync::TryAcquireError::NoPermits) => return Err(TrySendError::Full(frames)),
            Err(tokio::sync::TryAcquireError::Closed) => return Err(TrySendError::Closed),
        };
        match self.queue.try_send(Queued::Message(frames, permit)) {
            Ok(()) => Ok(()),
            Err(tokio::sync::mpsc::error::TrySendError::Full(Queued::Message(frames, _))) => {
                Err(TrySendError::Full(frames))
            }
            Err(_) => Err(TrySendError::Closed),
        }
    }

    fn close(&self) {
        self.shut("closed locally");
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn admitted(&self) {
        if !self.admitted.swap(true, Ordering::AcqRel) {
            if let Some(slot) = &self.slot {
                slot.admitted();
            }
            self.admitted_signal.notify_one();
        }
    }

    fn peer_key(&self) -> Option<CurvePublicKey> {
        self.peer_key
    }
}

struct Reader {
    conn: Arc<ZmtpConnection>,
    read: OwnedReadHalf,
    buf: BytesMut,
    decoder: FrameDecoder,
    /// What CURVE adds to each frame (0 for NULL).
    overhead: usize,
    /// The connection's message limit once admitted.
    max_message: usize,
    assembler: MessageAssembler,
    opener: Option<CurveOpener>,
    admit_by: Option<Instant>,
    delivery: Delivery,
}

impl Reader {
    async fn run(mut self) {
        let reason = self.read_all().await;
        self.conn.shut(reason);
    }

    async fn read_all(&mut self) -> &'static str {
        let conn: Arc<dyn Connection> = self.conn.clone();
        loop {
            if let Err(reason) = self.drain(&conn).await {
                return reason;
            }
            self.buf.reserve(READ_SPARE);
            let deadline = self
                .admit_by
                .filter(|_| !self.conn.admitted.load(Ordering::Acquire));
            tokio::select! {
                biased;
                _ = self.conn.cancel.cancelled() => return "closed",
                _ = self.conn.admitted_signal.notified(), if deadline.is_some() => {}
                _ = sleep_until_opt(deadline) => {
                    if !self.conn.admitted.load(Ordering::Acquire) {
                        tracing::warn!(conn = self.conn.id, "handshake_timeout: not admitted in time; closing");
                        return "handshake deadline";
                    }
                }
                read = self.read.read_buf(&mut self.buf) => match read {
                    Ok(0) => return "peer closed",
                    Ok(_) => {}
                    Err(_) => return "read failed",
                }
            }
        }
    }

    /// Handles every complete frame in the buffer.
    async fn drain(&mut self, conn: &Arc<dyn Connection>) -> Result<(), &'static str> {
        loop {
            if self.conn.closed.load(Ordering::Acquire) {
                return Err("closed");
            }
            let max = if self.conn.admitted.load(Ordering::Acquire) {
                self.max_message
            } else {
                self.max_message.min(PRE_ADMISSION_MAX)
            };
            self.assembler.set_max_bytes(max);
            // A frame is judged by its declared size against what the message may still
            // take, at its header: a peer cannot park a body the message has no room for.
            // (Commands, such as a PING inside a message, are small: they keep a little room.)
            self.decoder.max_frame = self.assembler.remaining().max(COMMAND_ROOM) + self.overhead;
            let frame = match self.decoder.decode(&mut self.buf) {
                Ok(Some(frame)) => frame,
                Ok(None) => return Ok(()),
                Err(e) => {
                    tracing::warn!(conn = self.conn.id, error = %e, "protocol_error: bad frame; closing");
                    return Err("protocol error");
                }
            };
            let (more, command, body) = match &mut self.opener {
                None => (frame.more(), frame.is_command(), frame.body.freeze()),
                Some(opener) => match opener.open_in_place(frame.body) {
                    Ok(opened) => (opened.more, opened.command, opened.data),
                    Err(e) => {
                        tracing::warn!(conn = self.conn.id, error = %e, "protocol_error: CURVE message refused; closing");
                        return Err("protocol error");
                    }
                },
            };
            if command {
                self.on_command(&body);
                continue;
            }
            match self.assembler.push(more, body) {
                Ok(Some(frames)) => self.deliver(conn, frames).await?,
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(conn = self.conn.id, error = %e, "protocol_error: message over the limits; closing");
                    return Err("protocol error");
                }
            }
        }
    }

    async fn deliver(
        &self,
        conn: &Arc<dyn Connection>,
        frames: Frames,
    ) -> Result<(), &'static str> {
        match &self.delivery {
            Delivery::Events(events) => {
                events.on_frames(conn, frames);
                Ok(())
            }
            Delivery::Channel(channel) => tokio::select! {
                _ = self.conn.cancel.cancelled() => Err("closed"),
                sent = channel.send(frames) => sent.map_err(|_| "consumer gone"),
            },
        }
    }

    /// ZMTP 3.1 PING is answered with PONG (its context echoed); other commands are ignored.
    fn on_command(&self, body: &[u8]) {
        if let Some((b"PING", data)) = split_command(body) {
            let context = data.get(2..).unwrap_or_default();
            let context = Bytes::copy_from_slice(&context[..context.len().min(16)]);
            let _ = self.conn.queue.try_send(Queued::Command("PONG", context));
        }
    }
}

/// Pending once, with the task woken at once: it goes to the back of its worker's run
/// queue. Unlike [`tokio::task::yield_now`], which defers the wake until the worker polls
/// its driver, this does not park the worker, so an idle connection pays almost nothing.
struct RequeueOnce(bool);

impl std::future::Future for RequeueOnce {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

struct Writer {
    conn: std::sync::Weak<ZmtpConnection>,
    cancel: CancellationToken,
    write: OwnedWriteHalf,
    rx: mpsc::Receiver<Queued>,
    outgoing: Outgoing,
}

impl Writer {
    async fn run(mut self) {
        let mut out = BytesMut::with_capacity(16 * 1024);
        let mut permits = Vec::with_capacity(WRITE_BATCH);
        loop {
            let first = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => break,
                next = self.rx.recv() => match next {
                    Some(item) => item,
                    None => break,
                },
            };
            // The permits of what is being written are held until the write is done, so
            // the byte bound covers the batch too.
            self.encode(first, &mut out, &mut permits);
            self.gather(&mut out, &mut permits);
            // A sender's wake puts this task in its worker's LIFO slot, so it would run
            // right after that one sender and write its message alone. Going once to the
            // back of the run queue lets the tasks already runnable (the other callers,
            // the handlers) queue theirs first: one write then carries the burst.
            if permits.len() < WRITE_BATCH && out.len() < WRITE_BATCH_BYTES {
                RequeueOnce(false).await;
                self.gather(&mut out, &mut permits);
            }
            let written = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => break,
                written = self.write.write_all(&out) => written,
            };
            out.clear();
            if out.capacity() > 4 * WRITE_BATCH_BYTES {
                out = BytesMut::with_capacity(16 * 1024);
            }
            permits.clear();
            if written.is_err() {
                if let Some(conn) = self.conn.upgrade() {
                    conn.shut("write failed");
                }
                break;
            }
        }
        let _ = self.write.shutdown().await;
    }

    /// Encodes what is queued now, up to the batch limits.
    fn gather(&mut self, out: &mut BytesMut, permits: &mut Vec<OwnedSemaphorePermit>) {
        while permits.len() < WRITE_BATCH && out.len() < WRITE_BATCH_BYTES {
            match self.rx.try_recv() {
                Ok(item) => self.encode(item, out, permits),
                Err(_) => break,
            }
        }
    }

    fn encode(
        &mut self,
        item: Queued,
        out: &mut BytesMut,
        permits: &mut Vec<OwnedSemaphorePermit>,
    ) {
        match item {
            Queued::Message(frames, permit) => {
                self.outgoing.put_message(out, &frames);
                permits.push(permit);
            }
            Queued::Command(name, data) => self.outgoing.put_command(out, name, &data),
        }
    }
}
