//! The PUB listener: accepts subscribers (up to a cap), tracks their topics (deduplicated,
//! up to a cap each), and keeps one bounded queue (the SendHighWaterMark) and one writer per
//! subscriber.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::curve::{CookieKey, CurveSealer};
use super::frame::{FrameDecoder, READ_CHUNK};
use super::handshake::{self, Side, SocketType};
use super::outgoing::Outgoing;
use crate::link::security::ServerSecurity;
use crate::sync::LockUnpoisoned;

/// One published record: the topic frame first.
pub(crate) type Record = Arc<[Bytes]>;

/// Records a writer takes from its queue per socket write.
const WRITE_BATCH: usize = 256;
/// The largest frame a subscriber may send (a subscription: one byte and a topic).
const MAX_SUBSCRIPTION_FRAME: usize = 4 * 1024;

/// Limits and security of a PUB listener.
#[derive(Debug, Clone)]
pub(crate) struct PubOptions {
    pub(crate) high_water_mark: usize,
    pub(crate) max_subscribers: usize,
    pub(crate) max_subscriptions: usize,
    pub(crate) handshake_timeout: Duration,
    pub(crate) security: ServerSecurity,
    /// A record each subscriber gets as soon as it subscribes to a prefix of its topic
    /// (the fanout beacon: a new subscriber hears its publisher at once, not at the next
    /// beacon interval).
    pub(crate) greeting: Option<Record>,
}

/// One connected subscriber: what it subscribed to and its queue.
pub(crate) struct SubscriberQueue {
    id: u64,
    topics: Mutex<Vec<Bytes>>,
    queue: mpsc::Sender<Record>,
}

impl SubscriberQueue {
    fn wants(&self, topic: &[u8]) -> bool {
        self.topics
            .lock_unpoisoned()
            .iter()
            .any(|t| topic.starts_with(t))
    }
}

/// A bound PUB endpoint.
pub(crate) struct PubListener {
    endpoint: String,
    subscribers: Arc<Mutex<Vec<Arc<SubscriberQueue>>>>,
    dropped: Arc<AtomicU64>,
    cancel: CancellationToken,
    tasks: TaskTracker,
}

impl PubListener {
    /// Binds `endpoint` (`tcp://host:port`, port 0 for any).
    pub(crate) async fn bind(endpoint: &str, options: PubOptions) -> std::io::Result<Self> {
        let address = super::transport::tcp_address(endpoint)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
        let socket = TcpListener::bind(address).await?;
        let local = socket.local_addr()?;
        let listener = PubListener {
            endpoint: format!("tcp://{local}"),
            subscribers: Arc::default(),
            dropped: Arc::default(),
            cancel: CancellationToken::new(),
            tasks: TaskTracker::new(),
        };
        let accept = Acceptor {
            subscribers: listener.subscribers.clone(),
            cancel: listener.cancel.clone(),
            tasks: listener.tasks.clone(),
            options: Arc::new(options),
            cookie: Arc::new(CookieKey::generate()),
            connected: Arc::default(),
        };
        listener.tasks.spawn(accept.run(socket));
        Ok(listener)
    }

    /// The endpoint subscribers connect to (with the real port).
    pub(crate) fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn matching(&self, topic: &[u8]) -> Vec<Arc<SubscriberQueue>> {
        self.subscribers
            .lock_unpoisoned()
            .iter()
            .filter(|s| s.wants(topic))
            .cloned()
            .collect()
    }

    /// Queues `record` for every subscriber of its topic; a subscriber whose queue is full
    /// loses this copy. Never waits.
    pub(crate) fn publish_dropping(&self, record: Record) {
        for subscriber in self.matching(&record[0]) {
            if subscriber.queue.try_send(record.clone()).is_err() {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Waits until every subscriber of the record's topic has room, then queues it for all
    /// of them at once. Past `deadline` nothing is queued anywhere.
    pub(crate) async fn publish_waiting(
        &self,
        record: Record,
        deadline: Instant,
    ) -> Result<(), ()> {
        let targets = self.matching(&record[0]);
        let mut permits = Vec::with_capacity(targets.len());
        for subscriber in &targets {
            match tokio::time::timeout_at(deadline, subscriber.queue.reserve()).await {
                Ok(Ok(permit)) => permits.push(permit),
                // A subscriber that left meanwhile no longer counts.
                Ok(Err(_)) => {}
                Err(_) => return Err(()),
            }
        }
        for permit in permits {
            permit.send(record.clone());
        }
        Ok(())
    }

    /// How many subscriber copies were dropped at the high-water mark so far.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Subscribers currently connected and subscribed-to topics among them.
    #[cfg(test)]
    fn subscriber_topics(&self) -> Vec<usize> {
        self.subscribers
            .lock_unpoisoned()
            .iter()
            .map(|s| s.topics.lock_unpoisoned().len())
            .collect()
    }

    /// Stops accepting and closes every subscriber connection.
    pub(crate) async fn close(&self) {
        self.cancel.cancel();
        self.tasks.close();
        self.tasks.wait().await;
    }
}

impl Drop for PubListener {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

struct Acceptor {
    subscribers: Arc<Mutex<Vec<Arc<SubscriberQueue>>>>,
    cancel: CancellationToken,
    tasks: TaskTracker,
    options: Arc<PubOptions>,
    cookie: Arc<CookieKey>,
    /// Connections accepted and not yet gone (handshaking or subscribed).
    connected: Arc<std::sync::atomic::AtomicUsize>,
}

impl Acceptor {
    async fn run(self, listener: TcpListener) {
        let mut next_id = 0u64;
        let mut refused = 0u64;
        loop {
            let accepted = tokio::select! {
                _ = self.cancel.cancelled() => return,
                accepted = listener.accept() => accepted,
            };
            let stream = match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "fanout accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            if self.connected.load(Ordering::Acquire) >= self.options.max_subscribers {
                refused += 1;
                if refused.is_power_of_two() {
                    tracing::warn!(
                        refused,
                        max = self.options.max_subscribers,
                        "connection_refused: fanout publisher at its subscriber cap"
                    );
                }
                drop(stream);
                continue;
            }
            self.connected.fetch_add(1, Ordering::AcqRel);
            next_id += 1;
            let subscriber = Subscriber {
                id: next_id,
                subscribers: self.subscribers.clone(),
                cancel: self.cancel.child_token(),
                options: self.options.clone(),
                cookie: self.cookie.clone(),
                connected: self.connected.clone(),
            };
            self.tasks.spawn(subscriber.serve(stream));
        }
    }
}

struct Subscriber {
    id: u64,
    subscribers: Arc<Mutex<Vec<Arc<SubscriberQueue>>>>,
    cancel: CancellationToken,
    options: Arc<PubOptions>,
    cookie: Arc<CookieKey>,
    connected: Arc<std::sync::atomic::AtomicUsize>,
}

impl Subscriber {
    async fn serve(self, mut stream: TcpStream) {
        self.serve_connected(&mut stream).await;
        self.connected.fetch_sub(1, Ordering::AcqRel);
    }

    async fn serve_connected(&self, stream: &mut TcpStream) {
        let _ = stream.set_nodelay(true);
        let side = Side::Server {
            security: &self.options.security,
            cookie: &self.cookie,
        };
        let handshake = handshake::run(stream, side, SocketType::Pub, 0);
        let established = tokio::select! {
            _ = self.cancel.cancelled() => return,
            done = tokio::time::timeout(self.options.handshake_timeout, handshake) => done,
        };
        let established = match established {
            Ok(Ok(established)) => established,
            Ok(Err(e)) => return tracing::warn!(error = %e, "fanout subscriber refused"),
            Err(_) => return tracing::warn!("handshake_timeout: fanout subscriber handshake"),
        };
        let (sealer, opener) = match established.cipher {
            Some(session) => {
                let (s, o) = session.split();
                (Some(s), Some(o))
            }
            None => (None, None),
        };
        let (tx, rx) = mpsc::channel(self.options.high_water_mark.max(1));
        let queue = Arc::new(SubscriberQueue {
            id: self.id,
            topics: Mutex::new(Vec::new()),
            queue: tx,
        });
        self.lock().push(queue.clone());
        tracing::debug!(subscriber = self.id, "fanout subscriber connected");
        let (reader, writer) = stream.split();
        let (pongs_tx, pongs_rx) = mpsc::channel(4);
        let subscriptions = Subscriptions {
            queue: &queue,
            buf: established.leftover,
            opener,
            max: self.options.max_subscriptions,
            pongs: pongs_tx,
            greeting: self.options.greeting.clone(),
        };
        tokio::select! {
            _ = self.cancel.cancelled() => {}
            reason = subscriptions.read(reader) => tracing::debug!(subscriber = self.id, reason, "fanout subscriber reads ended"),
            _ = write_records(writer, rx, pongs_rx, sealer) => {}
        }
        self.lock().retain(|s| s.id != self.id);
        tracing::debug!(subscriber = self.id, "fanout subscriber gone");
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<SubscriberQueue>>> {
        self.subscribers.lock_unpoisoned()
    }
}

/// Reads a subscriber's subscribe and cancel requests, in message form (`0x01`/`0x00` +
/// topic) or as ZMTP 3.1 SUBSCRIBE/CANCEL commands.
struct Subscriptions<'a> {
    queue: &'a SubscriberQueue,
    buf: BytesMut,
    opener: Option<super::curve::CurveOpener>,
    max: usize,
    /// PING contexts for the writer to answer.
    pongs: mpsc::Sender<Bytes>,
    /// Sent to this subscriber when it subscribes to a prefix of its topic.
    greeting: Option<Record>,
}

impl Subscriptions<'_> {
    /// Returns why the subscriber's reads ended.
    async fn read(mut self, mut reader: impl tokio::io::AsyncRead + Unpin) -> &'static str {
        let decoder = FrameDecoder {
            max_frame: MAX_SUBSCRIPTION_FRAME + super::curve::MESSAGE_OVERHEAD,
        };
        loop {
            match decoder.decode(&mut self.buf) {
                Ok(Some(frame)) => {
                    let (command, body) = match &mut self.opener {
                        None => (frame.is_command(), frame.body.freeze()),
                        Some(opener) => match opener.open_in_place(frame.body) {
                            Ok(opened) => (opened.command, opened.data),
                            Err(_) => return "CURVE message refused",
                        },
                    };
                    if let Err(reason) = self.apply(command, body) {
                        tracing::warn!(
                            subscriber = self.queue.id,
                            reason,
                            "protocol_error from a fanout subscriber; closing"
                        );
                        return reason;
                    }
                    continue;
                }
                Ok(None) => {}
                Err(_) => return "bad frame",
            }
            self.buf.reserve(READ_CHUNK.min(MAX_SUBSCRIPTION_FRAME * 2));
            match reader.read_buf(&mut self.buf).await {
                Ok(0) | Err(_) => return "closed",
                Ok(_) => {}
            }
        }
    }

    fn apply(&self, command: bool, body: Bytes) -> Result<(), &'static str> {
        let change = if command {
            let name_len = usize::from(body.first().copied().unwrap_or(0));
            match body.get(1..1 + name_len) {
                Some(b"SUBSCRIBE") => Some((true, body.slice(1 + name_len..))),
                Some(b"CANCEL") => Some((false, body.slice(1 + name_len..))),
                Some(b"PING") => {
                    // ZMTP 3.1 heartbeat: echo the context (after the 2-byte TTL).
                    let context = body.get(1 + name_len + 2..).unwrap_or_default();
                    let context = Bytes::copy_from_slice(&context[..context.len().min(16)]);
                    let _ = self.pongs.try_send(context);
                    None
                }
                _ => None,
            }
        } else {
            match body.first() {
                Some(1) => Some((true, body.slice(1..))),
                Some(0) => Some((false, body.slice(1..))),
                _ => None,
            }
        };
        let Some((subscribe, topic)) = change else {
            return Ok(());
        };
        let mut topics = self.queue.topics.lock_unpoisoned();
        let at = topics.iter().position(|t| *t == topic);
        match (subscribe, at) {
            // A duplicate subscription collapses into the one already held.
            (true, Some(_)) => {}
            (true, None) if topics.len() >= self.max => return Err("too many subscriptions"),
            (true, None) => {
                if let Some(greeting) = self.greeting.as_ref().filter(|g| g[0].starts_with(&topic))
                {
                    // A full queue means records are flowing: the greeting is not needed.
                    let _ = self.queue.queue.try_send(greeting.clone());
                }
                topics.push(topic);
            }
            (false, Some(at)) => {
                topics.remove(at);
            }
            (false, None) => {}
        }
        Ok(())
    }
}

/// Bytes a writer gathers before writing, at most (one large record may exceed it).
const WRITE_BATCH_BYTES: usize = 256 * 1024;

/// Writes queued records, several per socket write when they are waiting, and PONGs for
/// the subscriber's PINGs.
async fn write_records(
    mut writer: impl tokio::io::AsyncWrite + Unpin,
    mut rx: mpsc::Receiver<Record>,
    mut pongs: mpsc::Receiver<Bytes>,
    sealer: Option<CurveSealer>,
) {
    let mut out = BytesMut::new();
    let mut outgoing = Outgoing::new(sealer);
    loop {
        let mut next = tokio::select! {
            record = rx.recv() => match record {
                Some(record) => Some(record),
                None => return,
            },
            pong = pongs.recv() => {
                if let Some(context) = pong {
                    outgoing.put_command(&mut out, "PONG", &context);
                }
                None
            }
        };
        let mut batched = 0;
        while let Some(record) = next.take() {
            outgoing.put_message(&mut out, &record);
            batched += 1;
            if batched < WRITE_BATCH && out.len() < WRITE_BATCH_BYTES {
                next = rx.try_recv().ok();
            }
        }
        if writer.write_all(&out).await.is_err() {
            return;
        }
        out.clear();
        if out.capacity() > 4 * WRITE_BATCH_BYTES {
            out = BytesMut::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zeromq::{Socket, SocketRecv};

    fn options(high_water_mark: usize) -> PubOptions {
        PubOptions {
            high_water_mark,
            max_subscribers: 8,
            max_subscriptions: 4,
            handshake_timeout: Duration::from_secs(5),
            security: ServerSecurity::Null,
            greeting: None,
        }
    }

    /// A raw ZMTP 3.0 SUB over a plain socket: greeting, NULL READY, then `frames`.
    async fn raw_subscriber(endpoint: &str, frames: &[&[u8]]) -> TcpStream {
        let address = super::super::transport::tcp_address(endpoint).expect("test endpoint");
        let mut stream = TcpStream::connect(address).await.expect("connect");
        let greeting =
            super::super::greeting::greeting(0, super::super::greeting::Mechanism::Null, false);
        stream.write_all(&greeting).await.expect("greeting");
        let mut theirs = [0u8; 64];
        stream
            .read_exact(&mut theirs)
            .await
            .expect("their greeting");
        let mut out = BytesMut::new();
        let props = super::super::properties::encode(&[("Socket-Type", b"SUB")]);
        super::super::frame::put_command(&mut out, "READY", &props);
        for frame in frames {
            super::super::frame::put_frame(&mut out, 0, frame);
        }
        stream.write_all(&out).await.expect("subscriptions");
        stream
    }

    fn record(parts: &[&'static [u8]]) -> Record {
        parts
            .iter()
            .map(|p| Bytes::from_static(p))
            .collect::<Vec<_>>()
            .into()
    }

    async fn subscribed(listener: &PubListener, topic: &[u8]) {
        let until = Instant::now() + Duration::from_secs(5);
        while !listener.matching(topic).iter().any(|s| s.wants(topic)) {
            assert!(Instant::now() < until, "subscription never arrived");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn a_zeromq_sub_receives_only_its_topics() {
        let publisher = PubListener::bind("tcp://127.0.0.1:0", options(16))
            .await
            .expect("bind");
        let mut sub = zeromq::SubSocket::new();
        sub.connect(publisher.endpoint()).await.expect("connect");
        sub.subscribe("tea").await.expect("subscribe");
        subscribed(&publisher, b"tea").await;
        publisher.publish_dropping(record(&[b"coffee", b"no"]));
        publisher.publish_dropping(record(&[b"tea.green", b"yes"]));
        let got = tokio::time::timeout(Duration::from_secs(5), sub.recv())
            .await
            .expect("an event in time")
            .expect("an event");
        assert_eq!(got.get(0).map(|f| f.to_vec()), Some(b"tea.green".to_vec()));
        assert_eq!(got.get(1).map(|f| f.to_vec()), Some(b"yes".to_vec()));
        publisher.close().await;
    }

    #[tokio::test]
    async fn a_full_queue_drops_while_no_drop_waits_until_its_deadline() {
        let publisher = PubListener::bind("tcp://127.0.0.1:0", options(2))
            .await
            .expect("bind");
        // A raw SUB that subscribes and then never reads: the socket buffers fill, then
        // its queue of 2.
        let sub = raw_subscriber(publisher.endpoint(), &[b"\x01x"]).await;
        subscribed(&publisher, b"x").await;
        let big: Bytes = vec![0u8; 1 << 20].into();
        let until = Instant::now() + Duration::from_secs(10);
        while publisher.dropped() == 0 {
            assert!(Instant::now() < until, "never dropped");
            publisher.publish_dropping(vec![Bytes::from_static(b"x"), big.clone()].into());
            tokio::task::yield_now().await;
        }
        let started = Instant::now();
        let waited = publisher
            .publish_waiting(
                record(&[b"x", b"y"]),
                Instant::now() + Duration::from_millis(200),
            )
            .await;
        assert!(waited.is_err());
        assert!(started.elapsed() >= Duration::from_millis(200));
        drop(sub);
        publisher.close().await;
    }

    #[tokio::test]
    async fn pub_subscription_flood_is_bounded() {
        let publisher = PubListener::bind("tcp://127.0.0.1:0", options(4))
            .await
            .expect("bind");
        // The same topic many times collapses into one subscription.
        let dupes: Vec<&[u8]> = vec![b"\x01same"; 1000];
        let _dup = raw_subscriber(publisher.endpoint(), &dupes).await;
        subscribed(&publisher, b"same").await;
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            let topics = publisher.subscriber_topics();
            if topics == vec![1] {
                break;
            }
            assert!(
                Instant::now() < until,
                "duplicates never collapsed: {topics:?}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // Past the cap of 4 distinct topics the subscriber is closed.
        let many: Vec<Vec<u8>> = (0..100).map(|i| format!("\x01t{i}").into_bytes()).collect();
        let many: Vec<&[u8]> = many.iter().map(Vec::as_slice).collect();
        let mut flooder = raw_subscriber(publisher.endpoint(), &many).await;
        let mut sink = Vec::new();
        let read =
            tokio::time::timeout(Duration::from_secs(5), flooder.read_to_end(&mut sink)).await;
        assert!(read.is_ok(), "the flooding subscriber was not closed");
        // Past the cap of 8 subscribers, connections are refused at accept.
        let mut extra = Vec::new();
        for _ in 0..12 {
            let address =
                super::super::transport::tcp_address(publisher.endpoint()).expect("endpoint");
            extra.push(TcpStream::connect(address).await.expect("connect"));
        }
        let mut closed = 0;
        for stream in &mut extra {
            let mut byte = [0u8; 64];
            if let Ok(Ok(0)) =
                tokio::time::timeout(Duration::from_millis(500), stream.read(&mut byte)).await
            {
                closed += 1;
            }
        }
        assert!(
            closed >= 5,
            "only {closed} of 12 connections past the cap were refused"
        );
        assert!(publisher.subscriber_topics().iter().all(|n| *n <= 4));
        publisher.close().await;
    }

    #[tokio::test]
    async fn a_subscribers_ping_is_answered_with_pong() {
        let publisher = PubListener::bind("tcp://127.0.0.1:0", options(4))
            .await
            .expect("bind");
        let mut sub = raw_subscriber(publisher.endpoint(), &[b"\x01x"]).await;
        let mut out = BytesMut::new();
        super::super::frame::put_command(&mut out, "PING", b"\x00\x0actx");
        sub.write_all(&out).await.expect("ping");
        let mut buf = BytesMut::new();
        let decoder = FrameDecoder { max_frame: 1024 };
        let pong = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                // Their READY comes first.
                if let Some(frame) = decoder.decode(&mut buf).expect("valid frames") {
                    if frame.command().is_some_and(|(name, _)| name == b"PONG") {
                        return frame;
                    }
                    continue;
                }
                sub.read_buf(&mut buf).await.expect("read");
            }
        })
        .await
        .expect("a PONG in time");
        assert_eq!(
            pong.command().map(|(_, data)| data.to_vec()),
            Some(b"ctx".to_vec())
        );
        publisher.close().await;
    }

    /// The next message `sub` receives (commands skipped), in time.
    async fn next_message(sub: &mut TcpStream, buf: &mut BytesMut) -> Vec<Vec<u8>> {
        let decoder = FrameDecoder { max_frame: 1024 };
        tokio::time::timeout(Duration::from_secs(5), async {
            let mut parts = Vec::new();
            loop {
                if let Some(frame) = decoder.decode(buf).expect("valid frames") {
                    if frame.is_command() {
                        continue;
                    }
                    let more = frame.more();
                    parts.push(frame.body.to_vec());
                    if !more {
                        return parts;
                    }
                    continue;
                }
                let read = sub.read_buf(buf).await.expect("read");
                assert!(read > 0, "the publisher closed a subscriber it should keep");
            }
        })
        .await
        .expect("a message in time")
    }

    /// A connection the listener refuses at accept: closed before it sends a greeting.
    async fn refused_at_accept(endpoint: &str) -> bool {
        let address = super::super::transport::tcp_address(endpoint).expect("endpoint");
        let mut stream = TcpStream::connect(address).await.expect("connect");
        let mut byte = [0u8; 64];
        matches!(
            tokio::time::timeout(Duration::from_secs(2), stream.read(&mut byte)).await,
            Ok(Ok(0)) | Ok(Err(_))
        )
    }

    async fn subscribers_are(publisher: &PubListener, n: usize) {
        let until = Instant::now() + Duration::from_secs(5);
        while publisher.subscriber_topics().len() != n {
            assert!(
                Instant::now() < until,
                "{:?} subscribers, not {n}",
                publisher.subscriber_topics()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn exactly_the_subscribers_past_the_cap_are_refused_and_duplicates_collapse() {
        let publisher = PubListener::bind("tcp://127.0.0.1:0", options(16))
            .await
            .expect("bind");
        // Subscriber 0 subscribes to "dup" 1000 times (far past the cap of 4 distinct
        // topics, were duplicates counted) and to "end" once.
        let mut first: Vec<&[u8]> = vec![b"\x01dup"; 1000];
        first.push(b"\x01end");
        let mut subs = vec![raw_subscriber(publisher.endpoint(), &first).await];
        subscribed(&publisher, b"end").await;
        assert_eq!(
            publisher.subscriber_topics(),
            vec![2],
            "dup and end, once each"
        );
        for _ in 1..8 {
            subs.push(raw_subscriber(publisher.endpoint(), &[b"\x01t"]).await);
        }
        subscribers_are(&publisher, 8).await;
        let until = Instant::now() + Duration::from_secs(5);
        while publisher.matching(b"t").len() != 7 {
            assert!(
                Instant::now() < until,
                "the subscriptions to t never arrived"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // The cap is 8: each of 5 more is refused at accept, and the 8 stay.
        for i in 0..5 {
            assert!(
                refused_at_accept(publisher.endpoint()).await,
                "connection {i} past the cap was accepted"
            );
        }
        assert_eq!(publisher.subscriber_topics().len(), 8);
        let mut bufs: Vec<BytesMut> = (0..8).map(|_| BytesMut::new()).collect();
        publisher.publish_dropping(record(&[b"t", b"to-all-seven"]));
        for (sub, buf) in subs.iter_mut().zip(bufs.iter_mut()).skip(1) {
            assert_eq!(
                next_message(sub, buf).await,
                vec![b"t".to_vec(), b"to-all-seven".to_vec()]
            );
        }
        // One CANCEL ends the collapsed subscription: "dup" is no longer delivered.
        let mut cancel = BytesMut::new();
        super::super::frame::put_frame(&mut cancel, 0, b"\x00dup");
        subs[0].write_all(&cancel).await.expect("cancel");
        let until = Instant::now() + Duration::from_secs(5);
        while !publisher.matching(b"dup").is_empty() {
            assert!(Instant::now() < until, "the cancel never applied");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(publisher.subscriber_topics()[0], 1);
        publisher.publish_dropping(record(&[b"dup", b"cancelled"]));
        publisher.publish_dropping(record(&[b"end", b"last"]));
        assert_eq!(
            next_message(&mut subs[0], &mut bufs[0]).await,
            vec![b"end".to_vec(), b"last".to_vec()]
        );
        // A subscriber that leaves frees exactly one place.
        drop(subs.pop());
        subscribers_are(&publisher, 7).await;
        subs.push(raw_subscriber(publisher.endpoint(), &[b"\x01t"]).await);
        subscribers_are(&publisher, 8).await;
        assert!(refused_at_accept(publisher.endpoint()).await);
        publisher.close().await;
    }
}
