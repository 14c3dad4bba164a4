//! The default transport: ZMTP over TCP with the `zeromq` crate.
//!
//! A node listens with one ROUTER socket; every accepted peer is one [`Connection`] keyed by
//! the ZMTP identity the peer announced. Outbound connections use one DEALER socket each,
//! with a fresh identity per attempt, so a reconnect can never be confused with the old
//! connection and dropping the socket closes exactly that TCP connection.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use tokio::task::JoinHandle;
use zeromq::prelude::*;
use zeromq::util::PeerIdentity;
use zeromq::{
    DealerRecvHalf, DealerSendHalf, DealerSocket, MultiPeerBackend, RouterSendHalf, RouterSocket,
    SocketEvent, SocketOptions, ZmqMessage,
};

use super::transport::{
    next_conn_id, ConnId, Connection, Frames, LinkError, LinkEvents, Listener, Transport,
};

/// How long one TCP connect + ZMTP greeting may take before the attempt counts as failed.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// ZMTP over TCP (`tcp://host:port`).
#[derive(Debug, Default, Clone)]
pub struct ZmqTransport;

impl ZmqTransport {
    /// The transport.
    pub fn new() -> Self {
        ZmqTransport
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn check_endpoint(endpoint: &str) -> Result<(), LinkError> {
    if endpoint.starts_with("tcp://") {
        Ok(())
    } else {
        Err(LinkError::BadEndpoint(endpoint.to_string()))
    }
}

#[async_trait]
impl Transport for ZmqTransport {
    async fn listen(
        &self,
        endpoint: &str,
        events: Arc<dyn LinkEvents>,
    ) -> Result<Box<dyn Listener>, LinkError> {
        check_endpoint(endpoint)?;
        let mut socket = RouterSocket::new();
        let bound = socket
            .bind(endpoint)
            .await
            .map_err(|e| LinkError::Io(e.to_string()))?;
        let backend = socket.backend();
        let monitor = socket.monitor();
        let (send, mut recv) = socket.split();
        let shared = Arc::new(RouterShared {
            conns: Mutex::new(HashMap::new()),
            send,
            backend,
            events,
        });
        let recv_shared = Arc::downgrade(&shared);
        let recv_task = tokio::spawn(async move {
            loop {
                let message = match recv.recv().await {
                    Ok(m) => m,
                    Err(_) => break,
                };
                let Some(shared) = recv_shared.upgrade() else {
                    break;
                };
                let mut frames = message.into_vec();
                if frames.is_empty() {
                    continue;
                }
                let identity = frames.remove(0);
                let conn = shared.conn_for(&identity, &recv_shared);
                shared.events.on_frames(&conn, frames);
            }
        });
        let monitor_task = spawn_router_monitor(monitor, Arc::downgrade(&shared));
        Ok(Box::new(ZmqListener {
            endpoint: bound.to_string(),
            shared: Mutex::new(Some(shared)),
            tasks: vec![recv_task, monitor_task],
        }))
    }

    async fn connect(
        &self,
        endpoint: &str,
        events: Arc<dyn LinkEvents>,
    ) -> Result<Arc<dyn Connection>, LinkError> {
        check_endpoint(endpoint)?;
        let id = next_conn_id();
        let identity = format!("zl{id:x}-{:016x}", rand::random::<u64>());
        let mut options = SocketOptions::default();
        let peer_id = PeerIdentity::try_from(identity.into_bytes())
            .map_err(|e| LinkError::Io(e.to_string()))?;
        options
            .peer_identity(peer_id)
            .connect_timeout(CONNECT_TIMEOUT);
        let mut socket = DealerSocket::with_options(options);
        let monitor = socket.monitor();
        match tokio::time::timeout(CONNECT_TIMEOUT, socket.connect(endpoint)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(LinkError::Io(e.to_string())),
            Err(_) => return Err(LinkError::Io(format!("connect to {endpoint} timed out"))),
        }
        let (send, recv) = socket.split();
        let conn = Arc::new(DealerConn {
            id,
            send: tokio::sync::Mutex::new(Some(send)),
            closed: AtomicBool::new(false),
            tasks: Mutex::new(Vec::new()),
            events: events.clone(),
        });
        let as_dyn: Arc<dyn Connection> = conn.clone();
        let recv_task = spawn_dealer_recv(recv, Arc::downgrade(&as_dyn), Arc::downgrade(&conn));
        let monitor_task = spawn_dealer_monitor(monitor, Arc::downgrade(&conn));
        lock(&conn.tasks).extend([recv_task, monitor_task]);
        Ok(as_dyn)
    }
}

struct RouterShared {
    conns: Mutex<HashMap<Bytes, Arc<RouterConn>>>,
    send: RouterSendHalf,
    backend: Arc<dyn MultiPeerBackend>,
    events: Arc<dyn LinkEvents>,
}

impl RouterShared {
    fn conn_for(&self, identity: &Bytes, me: &Weak<RouterShared>) -> Arc<dyn Connection> {
        let mut conns = lock(&self.conns);
        let conn = conns.entry(identity.clone()).or_insert_with(|| {
            Arc::new(RouterConn {
                id: next_conn_id(),
                identity: identity.clone(),
                shared: me.clone(),
                closed: AtomicBool::new(false),
            })
        });
        conn.clone()
    }

    fn closed(&self, identity: &[u8]) {
        let removed = lock(&self.conns).remove(identity);
        if let Some(conn) = removed {
            if !conn.closed.swap(true, Ordering::AcqRel) {
                self.events.on_closed(conn.id);
            }
        }
    }
}

fn spawn_router_monitor(
    mut monitor: futures::channel::mpsc::Receiver<SocketEvent>,
    shared: Weak<RouterShared>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(event) = monitor.next().await {
            if let SocketEvent::Disconnected(peer) = event {
                let Some(shared) = shared.upgrade() else {
                    break;
                };
                shared.closed(peer.as_ref());
            }
        }
    })
}

struct RouterConn {
    id: ConnId,
    identity: Bytes,
    shared: Weak<RouterShared>,
    closed: AtomicBool,
}

#[async_trait]
impl Connection for RouterConn {
    fn id(&self) -> ConnId {
        self.id
    }

    async fn send(&self, frames: Frames) -> Result<(), LinkError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(LinkError::Closed);
        }
        let shared = self.shared.upgrade().ok_or(LinkError::Closed)?;
        let mut all = Vec::with_capacity(frames.len() + 1);
        all.push(self.identity.clone());
        all.extend(frames);
        let message = ZmqMessage::try_from(all).map_err(|_| LinkError::Closed)?;
        let mut send = shared.send.clone();
        send.send(message).await.map_err(|_| LinkError::Closed)
    }

    fn close(&self) {
        if let Some(shared) = self.shared.upgrade() {
            if let Ok(peer) = PeerIdentity::try_from(self.identity.clone()) {
                // Drops the peer's write queue and read stream: the TCP connection closes.
                shared.backend.peer_disconnected(&peer);
            }
            shared.closed(&self.identity);
        }
    }
}

struct ZmqListener {
    endpoint: String,
    shared: Mutex<Option<Arc<RouterShared>>>,
    tasks: Vec<JoinHandle<()>>,
}

impl Listener for ZmqListener {
    fn endpoint(&self) -> String {
        self.endpoint.clone()
    }

    fn close(&self) {
        for task in &self.tasks {
            task.abort();
        }
        if let Some(shared) = lock(&self.shared).take() {
            let conns: Vec<_> = lock(&shared.conns).values().cloned().collect();
            for conn in conns {
                conn.close();
            }
            shared.backend.shutdown();
        }
    }
}

impl Drop for ZmqListener {
    fn drop(&mut self) {
        self.close();
    }
}

struct DealerConn {
    id: ConnId,
    send: tokio::sync::Mutex<Option<DealerSendHalf>>,
    closed: AtomicBool,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    events: Arc<dyn LinkEvents>,
}

impl DealerConn {
    fn mark_closed(&self) {
        if !self.closed.swap(true, Ordering::AcqRel) {
            for task in lock(&self.tasks).drain(..) {
                task.abort();
            }
            self.events.on_closed(self.id);
        }
    }
}

fn spawn_dealer_recv(
    mut recv: DealerRecvHalf,
    conn: Weak<dyn Connection>,
    dealer: Weak<DealerConn>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let result = recv.recv().await;
            let Some(conn) = conn.upgrade() else { return };
            match result {
                Ok(message) => {
                    if let Some(d) = dealer.upgrade() {
                        d.events.on_frames(&conn, message.into_vec());
                    }
                }
                Err(_) => break,
            }
        }
        if let Some(d) = dealer.upgrade() {
            d.mark_closed();
        }
    })
}

fn spawn_dealer_monitor(
    mut monitor: futures::channel::mpsc::Receiver<SocketEvent>,
    dealer: Weak<DealerConn>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(event) = monitor.next().await {
            if matches!(event, SocketEvent::Disconnected(_)) {
                break;
            }
        }
        if let Some(d) = dealer.upgrade() {
            d.mark_closed();
        }
    })
}

#[async_trait]
impl Connection for DealerConn {
    fn id(&self) -> ConnId {
        self.id
    }

    async fn send(&self, frames: Frames) -> Result<(), LinkError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(LinkError::Closed);
        }
        let message = ZmqMessage::try_from(frames).map_err(|_| LinkError::Closed)?;
        let mut guard = self.send.lock().await;
        let send = guard.as_mut().ok_or(LinkError::Closed)?;
        send.send(message).await.map_err(|_| LinkError::Closed)
    }

    fn close(&self) {
        if let Ok(mut guard) = self.send.try_lock() {
            guard.take();
        }
        self.mark_closed();
    }
}

impl Drop for DealerConn {
    fn drop(&mut self) {
        for task in lock(&self.tasks).drain(..) {
            task.abort();
        }
    }
}
