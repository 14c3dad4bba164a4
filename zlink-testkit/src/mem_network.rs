//! An in-memory network with fault injection.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use zlink::transport::{
    next_conn_id, ConnId, ConnectOptions, Connection, Frames, LinkError, LinkEvents, ListenOptions,
    Listener, Transport,
};

/// What happens to traffic from one host to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkFault {
    /// Messages are lost silently; the connection still looks open (a blackhole).
    Drop,
    /// Messages arrive after this delay, in the order sent.
    Delay(Duration),
    /// Every send fails as if the connection had just closed, while nothing else has
    /// told the sender so: the link still looks ready until the failed send is seen.
    RefuseSends,
}

#[derive(Default)]
struct NetState {
    listeners: HashMap<String, (String, Arc<dyn LinkEvents>)>,
    conns: Vec<Arc<MemConn>>,
    faults: HashMap<(String, String), LinkFault>,
    dead_hosts: std::collections::HashSet<String>,
}

/// A shared in-memory network. Each node gets its own [`MemTransport`] named after its
/// host; endpoints look like `mem://name:1`.
#[derive(Clone, Default)]
pub struct MemNetwork {
    state: Arc<Mutex<NetState>>,
}

/// Takes a lock whatever became of its last holder (a panicking test thread).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl MemNetwork {
    /// An empty network.
    pub fn new() -> Self {
        Self::default()
    }

    /// The transport a node on `host` uses.
    pub fn host(&self, host: &str) -> Arc<MemTransport> {
        Arc::new(MemTransport {
            host: host.to_string(),
            net: self.clone(),
        })
    }

    /// Applies `fault` to traffic from `from` to `to` (one direction only).
    pub fn set_fault(&self, from: &str, to: &str, fault: LinkFault) {
        lock(&self.state)
            .faults
            .insert((from.into(), to.into()), fault);
    }

    /// Removes the fault from `from` to `to`.
    pub fn clear_fault(&self, from: &str, to: &str) {
        lock(&self.state)
            .faults
            .remove(&(from.to_string(), to.to_string()));
    }

    /// Makes the link between `a` and `b` half-open: both directions swallow traffic while
    /// neither side is told the connection is gone.
    pub fn half_open(&self, a: &str, b: &str) {
        self.set_fault(a, b, LinkFault::Drop);
        self.set_fault(b, a, LinkFault::Drop);
    }

    /// Kills `host`: every connection to or from it closes at once (both ends are told)
    /// and it can neither connect nor be connected to until [`revive`](Self::revive).
    pub fn kill(&self, host: &str) {
        let victims: Vec<Arc<MemConn>> = {
            let mut st = lock(&self.state);
            st.dead_hosts.insert(host.to_string());
            st.listeners.retain(|_, (h, _)| h != host);
            st.conns
                .iter()
                .filter(|c| c.local == host || c.remote == host)
                .cloned()
                .collect()
        };
        for conn in victims {
            conn.close();
        }
    }

    /// Lets a killed host take part again (its node must listen anew).
    pub fn revive(&self, host: &str) {
        lock(&self.state).dead_hosts.remove(host);
    }

    fn fault(&self, from: &str, to: &str) -> Option<LinkFault> {
        lock(&self.state)
            .faults
            .get(&(from.to_string(), to.to_string()))
            .copied()
    }
}

/// One host's view of a [`MemNetwork`].
pub struct MemTransport {
    host: String,
    net: MemNetwork,
}

struct MemListener {
    endpoint: String,
    net: MemNetwork,
}

impl Listener for MemListener {
    fn endpoint(&self) -> String {
        self.endpoint.clone()
    }

    fn close(&self) {
        lock(&self.net.state).listeners.remove(&self.endpoint);
    }
}

struct MemConn {
    id: ConnId,
    me: Weak<MemConn>,
    local: String,
    remote: String,
    peer: Mutex<Weak<MemConn>>,
    events: Arc<dyn LinkEvents>,
    closed: AtomicBool,
    net: MemNetwork,
    /// Delayed messages, delivered in the order sent (a real connection never reorders),
    /// with how many are still on their way.
    delayed: Mutex<Option<tokio::sync::mpsc::UnboundedSender<(tokio::time::Instant, Frames)>>>,
    in_delay: Arc<std::sync::atomic::AtomicUsize>,
}

impl MemConn {
    /// Queues `frames` for `peer`, due at `due`, behind every delayed message before them.
    fn deliver_late(&self, peer: Arc<MemConn>, due: tokio::time::Instant, frames: Frames) {
        let mut delayed = lock(&self.delayed);
        let queue = delayed.get_or_insert_with(|| {
            let (tx, mut rx) =
                tokio::sync::mpsc::unbounded_channel::<(tokio::time::Instant, Frames)>();
            let peer = Arc::downgrade(&peer);
            let in_delay = self.in_delay.clone();
            tokio::spawn(async move {
                while let Some((due, frames)) = rx.recv().await {
                    tokio::time::sleep_until(due).await;
                    if let Some(peer) = peer.upgrade() {
                        peer.deliver(frames);
                    }
                    in_delay.fetch_sub(1, Ordering::AcqRel);
                }
            });
            tx
        });
        self.in_delay.fetch_add(1, Ordering::AcqRel);
        if queue.send((due, frames)).is_err() {
            self.in_delay.fetch_sub(1, Ordering::AcqRel);
        }
    }

    fn deliver(&self, frames: Frames) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        if let Some(me) = self.me.upgrade() {
            let as_dyn: Arc<dyn Connection> = me;
            self.events.on_frames(&as_dyn, frames);
        }
    }
}

#[async_trait]
impl Connection for MemConn {
    fn id(&self) -> ConnId {
        self.id
    }

    async fn send(&self, frames: Frames) -> Result<(), LinkError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(LinkError::Closed);
        }
        if matches!(
            self.net.fault(&self.local, &self.remote),
            Some(LinkFault::RefuseSends)
        ) {
            return Err(LinkError::Closed);
        }
        let peer = lock(&self.peer).upgrade();
        let Some(peer) = peer else {
            return Err(LinkError::Closed);
        };
        match self.net.fault(&self.local, &self.remote) {
            Some(LinkFault::Drop) | Some(LinkFault::RefuseSends) => {}
            Some(LinkFault::Delay(d)) => {
                self.deliver_late(peer, tokio::time::Instant::now() + d, frames)
            }
            // Still behind delayed ones: in order, after them.
            None if self.in_delay.load(Ordering::Acquire) > 0 => {
                self.deliver_late(peer, tokio::time::Instant::now(), frames)
            }
            None => peer.deliver(frames),
        }
        Ok(())
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        lock(&self.net.state).conns.retain(|c| c.id != self.id);
        self.events.on_closed(self.id);
        let peer = lock(&self.peer).upgrade();
        if let Some(peer) = peer {
            peer.close();
        }
    }
}

#[async_trait]
impl Transport for MemTransport {
    async fn listen(
        &self,
        endpoint: &str,
        events: Arc<dyn LinkEvents>,
        _options: ListenOptions,
    ) -> Result<Box<dyn Listener>, LinkError> {
        let mut st = lock(&self.net.state);
        if st.listeners.contains_key(endpoint) {
            return Err(LinkError::Io(format!("{endpoint} already bound")));
        }
        st.listeners
            .insert(endpoint.to_string(), (self.host.clone(), events));
        Ok(Box::new(MemListener {
            endpoint: endpoint.to_string(),
            net: self.net.clone(),
        }))
    }

    async fn connect(
        &self,
        endpoint: &str,
        events: Arc<dyn LinkEvents>,
        _options: ConnectOptions,
    ) -> Result<Arc<dyn Connection>, LinkError> {
        let mut st = lock(&self.net.state);
        if st.dead_hosts.contains(&self.host) {
            return Err(LinkError::Io("host is down".into()));
        }
        let Some((remote, server_events)) = st.listeners.get(endpoint).cloned() else {
            return Err(LinkError::Io(format!("connection refused: {endpoint}")));
        };
        let make = |local: &str, remote: &str, events: Arc<dyn LinkEvents>| {
            Arc::new_cyclic(|me| MemConn {
                id: next_conn_id(),
                me: me.clone(),
                local: local.to_string(),
                remote: remote.to_string(),
                peer: Mutex::new(Weak::new()),
                events,
                closed: AtomicBool::new(false),
                net: self.net.clone(),
                delayed: Mutex::new(None),
                in_delay: Arc::default(),
            })
        };
        let client = make(&self.host, &remote, events);
        let server = make(&remote, &self.host, server_events);
        *lock(&client.peer) = Arc::downgrade(&server);
        *lock(&server.peer) = Arc::downgrade(&client);
        // The network holds both ends until they close.
        st.conns.push(client.clone());
        st.conns.push(server);
        Ok(client)
    }
}
