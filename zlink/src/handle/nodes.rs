//! [`Nodes`]: node-direct calls by RID, and the ready peers.

use std::time::Duration;

use tokio::time::Instant;

use super::call_builder::{Call, OneWay, Reply, Target};
use super::Handle;
use crate::mesh::peer_table::next_event;
use crate::mesh::PeerStatus;
use crate::wire::{Message, Request};
use crate::{Error, ErrorKind, Result};

/// The node-direct side of a handle, from [`Handle::nodes`] (a
/// `Runtime` dereferences to its handle).
#[derive(Clone, Copy)]
pub struct Nodes<'a> {
    handle: &'a Handle,
}

impl<'a> Nodes<'a> {
    pub(crate) fn new(handle: &'a Handle) -> Self {
        Nodes { handle }
    }

    /// A request to the node `rid`; never redirected to another node.
    pub fn request<R: Request>(self, rid: &'a str, request: &R) -> Call<'a, Reply<R::Reply>> {
        Call::new(self.handle, Ok(Target::Node(rid)), request)
    }

    /// A one-way send to the node `rid`.
    pub fn send<M: Message>(self, rid: &'a str, message: &M) -> Call<'a, OneWay> {
        Call::new(self.handle, Ok(Target::Node(rid)), message)
    }

    /// Why the peers this node dials and is not connected to failed last, one line each
    /// (the first few): the endpoint, the RID expected there, the reason (a refused
    /// CURVE key names the mechanism and what the peer said) and how many attempts.
    /// Empty when every dial is connected.
    pub fn dial_failures(self) -> Vec<String> {
        self.handle.node().links().dial_failures()
    }

    /// The ready peers, sorted by RID.
    pub fn peers(self) -> Vec<PeerStatus> {
        self.handle.node().peer_statuses()
    }

    /// Waits until `condition` holds for the ready-peer list, woken by peer events, or
    /// fails `DeadlineExceeded` after `timeout`.
    ///
    /// ```no_run
    /// # async fn run(rt: zlink::Runtime) -> zlink::Result<()> {
    /// use std::time::Duration;
    /// rt.nodes().wait_for(Duration::from_secs(5), |peers| peers.len() >= 2).await?;
    /// # Ok(()) }
    /// ```
    pub async fn wait_for(
        self,
        timeout: Duration,
        condition: impl Fn(&[PeerStatus]) -> bool,
    ) -> Result<Vec<PeerStatus>> {
        let until = Instant::now() + timeout;
        let node = self.handle.node();
        let mut events = node.peers().subscribe();
        loop {
            let peers = node.peer_statuses();
            if condition(&peers) {
                return Ok(peers);
            }
            if tokio::time::timeout_at(until, next_event(&mut events))
                .await
                .is_err()
            {
                return Err(Error::new(
                    ErrorKind::DeadlineExceeded,
                    "peer condition not met in time",
                ));
            }
        }
    }
}
