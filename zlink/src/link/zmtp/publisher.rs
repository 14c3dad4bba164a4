//! The PUB listener: accepts subscribers, tracks their topics, and keeps one bounded queue
//! (the SendHighWaterMark) and one writer per subscriber.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::frame::{put_message, read_frame, COMMAND};
use super::handshake;

/// One published record: the topic frame first.
pub(crate) type Record = Arc<[Bytes]>;

/// How long a new subscriber may take for its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Records a writer takes from its queue per socket write.
const WRITE_BATCH: usize = 256;

/// One connected subscriber: what it subscribed to and its queue.
pub(crate) struct SubscriberQueue {
    id: u64,
    topics: Mutex<Vec<Bytes>>,
    queue: mpsc::Sender<Record>,
}

impl SubscriberQueue {
    fn wants(&self, topic: &[u8]) -> bool {
        self.topics
            .lock()
            .unwrap_or_else(|p| p.into_inner())
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

fn host_port(endpoint: &str) -> std::io::Result<&str> {
    endpoint.strip_prefix("tcp://").ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{endpoint:?} is not a tcp:// endpoint"),
        )
    })
}

impl PubListener {
    /// Binds `endpoint` (`tcp://host:port`, port 0 for any) with a queue of `high_water_mark`
    /// records per subscriber.
    pub(crate) async fn bind(endpoint: &str, high_water_mark: usize) -> std::io::Result<Self> {
        let socket = TcpListener::bind(host_port(endpoint)?).await?;
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
            high_water_mark: high_water_mark.max(1),
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
            .lock()
            .unwrap_or_else(|p| p.into_inner())
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
    high_water_mark: usize,
}

impl Acceptor {
    async fn run(self, listener: TcpListener) {
        let mut next_id = 0u64;
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
            next_id += 1;
            let subscriber = Subscriber {
                id: next_id,
                subscribers: self.subscribers.clone(),
                cancel: self.cancel.child_token(),
                high_water_mark: self.high_water_mark,
            };
            self.tasks.spawn(subscriber.serve(stream));
        }
    }
}

struct Subscriber {
    id: u64,
    subscribers: Arc<Mutex<Vec<Arc<SubscriberQueue>>>>,
    cancel: CancellationToken,
    high_water_mark: usize,
}

impl Subscriber {
    async fn serve(self, mut stream: TcpStream) {
        let _ = stream.set_nodelay(true);
        match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake::accept(&mut stream)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return tracing::warn!(error = %e, "fanout subscriber refused"),
            Err(_) => return tracing::warn!("fanout subscriber handshake timed out"),
        }
        let (tx, rx) = mpsc::channel(self.high_water_mark);
        let queue = Arc::new(SubscriberQueue {
            id: self.id,
            topics: Mutex::new(Vec::new()),
            queue: tx,
        });
        self.lock().push(queue.clone());
        tracing::debug!(subscriber = self.id, "fanout subscriber connected");
        let (reader, writer) = stream.into_split();
        tokio::select! {
            _ = self.cancel.cancelled() => {}
            _ = read_subscriptions(reader, &queue) => {}
            _ = write_records(writer, rx) => {}
        }
        self.lock().retain(|s| s.id != self.id);
        tracing::debug!(subscriber = self.id, "fanout subscriber gone");
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<SubscriberQueue>>> {
        self.subscribers.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Applies subscribe and cancel requests, in message form (`0x01`/`0x00` + topic) or as
/// ZMTP 3.1 SUBSCRIBE/CANCEL commands. Returns when the subscriber goes away.
async fn read_subscriptions(mut reader: tokio::net::tcp::OwnedReadHalf, queue: &SubscriberQueue) {
    loop {
        let frame = match read_frame(&mut reader).await {
            Ok(frame) => frame,
            Err(_) => return,
        };
        let change = if frame.flags & COMMAND != 0 {
            let name_len = usize::from(frame.body.first().copied().unwrap_or(0));
            match frame.body.get(1..1 + name_len) {
                Some(b"SUBSCRIBE") => Some((true, frame.body.slice(1 + name_len..))),
                Some(b"CANCEL") => Some((false, frame.body.slice(1 + name_len..))),
                _ => None,
            }
        } else {
            match frame.body.first() {
                Some(1) => Some((true, frame.body.slice(1..))),
                Some(0) => Some((false, frame.body.slice(1..))),
                _ => None,
            }
        };
        let Some((subscribe, topic)) = change else {
            continue;
        };
        let mut topics = queue.topics.lock().unwrap_or_else(|p| p.into_inner());
        if subscribe {
            topics.push(topic);
        } else if let Some(at) = topics.iter().position(|t| *t == topic) {
            topics.remove(at);
        }
    }
}

/// Writes queued records, several per socket write when they are waiting.
async fn write_records(
    mut writer: tokio::net::tcp::OwnedWriteHalf,
    mut rx: mpsc::Receiver<Record>,
) {
    let mut out = BytesMut::new();
    while let Some(record) = rx.recv().await {
        put_message(&mut out, &record);
        for _ in 1..WRITE_BATCH {
            match rx.try_recv() {
                Ok(record) => put_message(&mut out, &record),
                Err(_) => break,
            }
        }
        if writer.write_all(&out).await.is_err() {
            return;
        }
        out.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zeromq::{Socket, SocketRecv};

    async fn stalled_subscriber(endpoint: &str) -> TcpStream {
        use tokio::io::AsyncReadExt;
        let mut stream = TcpStream::connect(host_port(endpoint).expect("test setup"))
            .await
            .expect("test setup");
        let mut greeting = [0u8; 64];
        greeting[0] = 0xFF;
        greeting[9] = 0x7F;
        greeting[10] = 3;
        greeting[12..16].copy_from_slice(b"NULL");
        stream.write_all(&greeting).await.expect("test setup");
        let mut theirs = [0u8; 64];
        stream.read_exact(&mut theirs).await.expect("test setup");
        let mut ready = BytesMut::new();
        let body = [
            &[5u8][..],
            b"READY",
            &[11],
            b"Socket-Type",
            &3u32.to_be_bytes(),
            b"SUB",
        ]
        .concat();
        super::super::frame::put_frame(&mut ready, COMMAND, &body);
        super::super::frame::put_frame(&mut ready, 0, b"\x01");
        stream.write_all(&ready).await.expect("test setup");
        let _their_ready = read_frame(&mut stream).await.expect("test setup");
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
        let publisher = PubListener::bind("tcp://127.0.0.1:0", 16)
            .await
            .expect("test setup");
        let mut sub = zeromq::SubSocket::new();
        sub.connect(publisher.endpoint()).await.expect("test setup");
        sub.subscribe("tea").await.expect("test setup");
        subscribed(&publisher, b"tea").await;
        publisher.publish_dropping(record(&[b"coffee", b"no"]));
        publisher.publish_dropping(record(&[b"tea.green", b"yes"]));
        let got = tokio::time::timeout(Duration::from_secs(5), sub.recv())
            .await
            .expect("test setup")
            .expect("test setup");
        assert_eq!(got.get(0).expect("test setup").as_ref(), b"tea.green");
        assert_eq!(got.get(1).expect("test setup").as_ref(), b"yes");
        publisher.close().await;
    }

    #[tokio::test]
    async fn a_full_queue_drops_while_no_drop_waits_until_its_deadline() {
        let publisher = PubListener::bind("tcp://127.0.0.1:0", 2)
            .await
            .expect("test setup");
        // A raw SUB that subscribes and then never reads: the socket buffers fill, then
        // its queue of 2.
        let sub = stalled_subscriber(publisher.endpoint()).await;
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
}
