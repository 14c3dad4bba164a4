//! Calls: the outbound API every subsystem calls through. Find a peer (`peer`, `select`),
//! then `send` (complete once the connection's queue accepts) or `request` (one terminal
//! result by the one deadline, ended by the pending table's sweeper). Replies go out
//! through [`Links::reply`].

use std::sync::Arc;

use bytes::Bytes;
use tokio::time::Instant;

use super::identity::NodeIdentity;
use super::links::Links;
use super::peer_table::{next_event, PeerLink, PeerTable};
use super::policy::RolePolicy;
use super::services::Clock;
use super::MeshSettings;
use crate::call::PendingTable;
use crate::link::TrySendError;
use crate::wire::{Command, Metadata};
use crate::{Error, ErrorKind, Result};

/// One application message to send: its command, names, metadata and payload.
pub(crate) struct OutboundCall<'a> {
    pub(crate) command: Command,
    /// The ChannelName, or the target Spot ID of a Spot command (empty for node-direct).
    pub(crate) target: &'a str,
    pub(crate) packet: &'a str,
    /// The resolved owner fence (Spot commands only).
    pub(crate) fence: Option<crate::wire::RouteFence>,
    /// Forwarding hops so far (0 unless Message Follow relays it).
    pub(crate) hops: u8,
    /// A session's relay to its bound Actor: the binding it goes under.
    pub(crate) session: Option<crate::wire::SessionTail>,
    /// A bound Actor's push (command 36): its session and binding.
    pub(crate) push: Option<crate::wire::PushTail>,
    /// The operation it continues (a relay keeps its sender's); `None` starts a new one.
    pub(crate) operation: Option<u64>,
    pub(crate) metadata: &'a Metadata,
    pub(crate) payload: Bytes,
}

/// The longest a ClientServer call waits for a ready server.
const CANDIDATE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

fn deadline_exceeded(what: &str) -> Error {
    Error::new(ErrorKind::DeadlineExceeded, what.to_string())
}

/// Why a message could not be queued on one link.
enum Refused {
    /// The connection ended: another candidate may take it.
    Closed,
    Failed(Error),
}

/// A request its link's queue accepted, waiting for its one terminal result.
pub(crate) struct SubmittedRequest {
    guard: crate::call::PendingGuard,
    reply: tokio::sync::oneshot::Receiver<Result<Bytes>>,
}

impl SubmittedRequest {
    /// The request's terminal result: its reply, an error reply, its deadline, or the
    /// runtime stopping.
    pub(crate) async fn reply(self) -> Result<Bytes> {
        let SubmittedRequest { guard, reply } = self;
        let outcome = reply.await;
        drop(guard);
        outcome.unwrap_or_else(|_| {
            Err(Error::new(
                ErrorKind::ShuttingDown,
                "the runtime stopped before the reply",
            ))
        })
    }
}

/// The outbound side of one node.
pub(crate) struct Calls {
    identity: Arc<NodeIdentity>,
    policy: RolePolicy,
    settings: Arc<MeshSettings>,
    peers: Arc<PeerTable>,
    pending: Arc<PendingTable>,
    links: Arc<Links>,
    clock: Clock,
    /// The operation identities of the commands this node starts.
    operations: crate::wire::OperationIds,
}

impl Calls {
    pub(crate) fn new(
        identity: Arc<NodeIdentity>,
        settings: Arc<MeshSettings>,
        peers: Arc<PeerTable>,
        pending: Arc<PendingTable>,
        links: Arc<Links>,
        clock: Clock,
    ) -> Self {
        Calls {
            identity,
            policy: links.policy().clone(),
            settings,
            peers,
            pending,
            links,
            clock,
            operations: crate::wire::OperationIds::default(),
        }
    }

    /// A new operation identity of this node's lifecycle.
    pub(crate) fn next_operation(&self) -> u64 {
        self.operations.next()
    }

    fn operation_of(&self, call: &OutboundCall<'_>) -> u64 {
        call.operation
            .filter(|op| *op != 0)
            .unwrap_or_else(|| self.operations.next())
    }

    pub(crate) fn ensure_running(&self) -> Result<()> {
        if self.identity.is_running() {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::ShuttingDown,
                "the runtime is shutting down",
            ))
        }
    }

    /// The link to node `rid`, waiting (until `until`) when the RID is known but not ready.
    pub(crate) async fn peer(&self, rid: &str, until: Instant) -> Result<PeerLink> {
        let mut events = self.peers.subscribe();
        loop {
            if let Some(link) = self.peers.link(rid) {
                return Ok(link);
            }
            if !self.peers.is_known(rid) {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!("node {rid} is not a member of this mesh"),
                ));
            }
            if tokio::time::timeout_at(until, next_event(&mut events))
                .await
                .is_err()
            {
                return Err(Error::new(
                    ErrorKind::Unavailable,
                    format!("node {rid} is not connected{}", self.why_not_connected()),
                ));
            }
            self.ensure_running()?;
        }
    }

    /// What the dialers that are not connected last met, as a clause to append to an error
    /// ("" when every dialer is connected).
    fn why_not_connected(&self) -> String {
        let failures = self.links.dial_failures();
        if failures.is_empty() {
            String::new()
        } else {
            format!("; {}", failures.join("; "))
        }
    }

    /// Select-one among ready servers of `channel` with weight > 0, skipping `excluded`
    /// connections. RouteMesh fails at once when there is none; a ClientServer client
    /// waits for one (admission already in progress) up to min(`deadline`, 5 s).
    pub(crate) async fn select(
        &self,
        channel: &str,
        deadline: Instant,
        excluded: &[crate::link::ConnId],
    ) -> Result<PeerLink> {
        if let Some(link) = self.peers.select(channel, excluded) {
            return Ok(link);
        }
        let not_found = || {
            Error::new(
                ErrorKind::NotFound,
                format!(
                    "no ready server with weight > 0 for channel {channel}{}",
                    self.why_not_connected()
                ),
            )
        };
        if !self.policy.waits_for_candidates() {
            self.peers.selection_failed(channel);
            return Err(not_found());
        }
        let until = deadline.min(self.clock.now() + CANDIDATE_WAIT);
        let mut events = self.peers.subscribe();
        loop {
            if let Some(link) = self.peers.select(channel, excluded) {
                return Ok(link);
            }
            if tokio::time::timeout_at(until, next_event(&mut events))
                .await
                .is_err()
            {
                self.peers.selection_failed(channel);
                return Err(not_found());
            }
            self.ensure_running()?;
        }
    }

    /// Queues `frames` on `link`: at once when its queue has room, else waiting until
    /// `admit_by`. Messages over the smaller of both sides' caps are refused here.
    async fn admit(
        &self,
        link: &PeerLink,
        frames: Vec<Bytes>,
        admit_by: Instant,
    ) -> std::result::Result<(), Refused> {
        let size: usize = frames.iter().map(Bytes::len).sum();
        let cap = link.max_message();
        if size > cap {
            return Err(Refused::Failed(Error::InvalidArgument(format!(
                "message of {size} bytes exceeds the channel's max message size of {cap} bytes"
            ))));
        }
        self.links.meter.sent(size);
        let frames = match link.conn().try_send(frames) {
            Ok(()) => return Ok(()),
            Err(TrySendError::Closed) => return Err(Refused::Closed),
            Err(TrySendError::Full(frames)) => frames,
        };
        match tokio::time::timeout_at(admit_by, link.conn().send(frames)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(Refused::Closed),
            Err(_) => Err(Refused::Failed(deadline_exceeded(
                "the local send queue did not accept in time",
            ))),
        }
    }

    /// Queues frames encoded already on `link` (one-way): at once when its queue has
    /// room, else waiting until `admit_by`.
    pub(crate) async fn send_frames(
        &self,
        link: &PeerLink,
        frames: Vec<Bytes>,
        admit_by: Instant,
    ) -> Result<()> {
        self.admit(link, frames, admit_by)
            .await
            .map_err(|r| self.refused(link, r))
    }

    /// One-way send on `link`: complete when its queue accepts (by `admit_by`).
    pub(crate) async fn send(
        &self,
        link: &PeerLink,
        call: &OutboundCall<'_>,
        admit_by: Instant,
    ) -> Result<()> {
        self.send_on(link, call, admit_by)
            .await
            .map_err(|r| self.refused(link, r))
    }

    async fn send_on(
        &self,
        link: &PeerLink,
        call: &OutboundCall<'_>,
        admit_by: Instant,
    ) -> std::result::Result<(), Refused> {
        let frames = crate::wire::encode_call(
            call.command,
            (0, self.operation_of(call)),
            0,
            crate::wire::Addressed {
                target: call.target,
                packet: call.packet,
                fence: call.fence,
                hops: call.hops,
                session: call.session,
                topic: None,
                push: call.push,
            },
            call.metadata,
            call.payload.clone(),
        );
        self.admit(link, frames, admit_by).await
    }

    /// The error a caller sees for a refusal; a closed connection is also forgotten.
    fn refused(&self, link: &PeerLink, refused: Refused) -> Error {
        match refused {
            Refused::Failed(e) => e,
            Refused::Closed => {
                self.links.lost(link.conn().id(), "send failed");
                Error::new(
                    ErrorKind::Unavailable,
                    format!("connection to node {} closed", link.rid()),
                )
            }
        }
    }

    /// Request on `link`: exactly one terminal result by `deadline` (the caller's whole
    /// `timeout`). The queue must accept by `admit_by`.
    pub(crate) async fn request(
        &self,
        link: &PeerLink,
        call: &OutboundCall<'_>,
        deadline: Instant,
        timeout: std::time::Duration,
        admit_by: Instant,
    ) -> Result<Bytes> {
        match self
            .request_on(link, call, deadline, timeout, admit_by)
            .await
        {
            Ok(reply) => reply,
            Err(refused) => Err(self.refused(link, refused)),
        }
    }

    /// Queues a request on `link` and returns at once once its queue accepted it, with
    /// the reply still to come: requests submitted one after another from one task leave
    /// in that order (Message Follow relays keep each sender's order this way).
    pub(crate) async fn submit_request(
        &self,
        link: &PeerLink,
        call: &OutboundCall<'_>,
        deadline: Instant,
        timeout: std::time::Duration,
        admit_by: Instant,
    ) -> Result<SubmittedRequest> {
        self.submit_on(link, call, deadline, timeout, admit_by)
            .await
            .map_err(|refused| self.refused(link, refused))
    }

    /// A request on `link`: `Err` when the queue refused it, else the request's result.
    async fn request_on(
        &self,
        link: &PeerLink,
        call: &OutboundCall<'_>,
        deadline: Instant,
        timeout: std::time::Duration,
        admit_by: Instant,
    ) -> std::result::Result<Result<Bytes>, Refused> {
        let submitted = self
            .submit_on(link, call, deadline, timeout, admit_by)
            .await?;
        Ok(submitted.reply().await)
    }

    async fn submit_on(
        &self,
        link: &PeerLink,
        call: &OutboundCall<'_>,
        deadline: Instant,
        timeout: std::time::Duration,
        admit_by: Instant,
    ) -> std::result::Result<SubmittedRequest, Refused> {
        let operation = self.operation_of(call);
        let (guard, reply) = self
            .pending
            .register(link.conn().id(), operation, deadline, timeout)
            .ok_or_else(|| {
                Refused::Failed(Error::new(
                    ErrorKind::ShuttingDown,
                    "the runtime is shutting down",
                ))
            })?;
        // The budget left at submission, not the full timeout: a request that waited for a
        // candidate or for queue room tells the server so.
        let remaining = deadline.saturating_duration_since(self.clock.now());
        let deadline_ms = remaining.as_millis().clamp(1, u128::from(u32::MAX)) as u32;
        let frames = crate::wire::encode_call(
            call.command,
            (guard.correlation, operation),
            deadline_ms,
            crate::wire::Addressed {
                target: call.target,
                packet: call.packet,
                fence: call.fence,
                hops: call.hops,
                session: call.session,
                topic: None,
                push: call.push,
            },
            call.metadata,
            call.payload.clone(),
        );
        self.admit(link, frames, admit_by.min(deadline)).await?;
        Ok(SubmittedRequest { guard, reply })
    }

    /// What every call checks first (the node serves; the packet name fits the wire's
    /// one-byte length), and the call's command (the send or the request form) with its
    /// whole-call timeout: the caller's, or the runtime's request or send timeout.
    fn prepare(
        &self,
        request: bool,
        packet: &str,
        (send, req): (Command, Command),
        options: &crate::CallOptions,
    ) -> Result<(Command, std::time::Duration)> {
        self.ensure_running()?;
        if packet.is_empty() || packet.len() > crate::wire::MAX_NAME_BYTES {
            return Err(Error::InvalidArgument(format!(
                "packet name must be 1..=255 bytes, {packet:?} is {}",
                packet.len()
            )));
        }
        Ok(if request {
            (
                req,
                options.timeout.unwrap_or(self.settings.request_timeout),
            )
        } else {
            (send, options.timeout.unwrap_or(self.settings.send_timeout))
        })
    }

    /// A channel call: select-one, then send or request; a target whose connection closes
    /// before its queue accepts is replaced by another eligible one.
    pub(crate) async fn call_channel(
        &self,
        channel: &str,
        request: bool,
        packet: &str,
        payload: Bytes,
        options: &crate::CallOptions,
    ) -> Result<Bytes> {
        let (command, timeout) = self.prepare(
            request,
            packet,
            (Command::ChannelSend, Command::ChannelRequest),
            options,
        )?;
        if channel.is_empty() || channel.len() > crate::wire::MAX_NAME_BYTES {
            return Err(Error::InvalidArgument(format!(
                "ChannelName must be 1..=255 bytes, {channel:?} is {}",
                channel.len()
            )));
        }
        let Some(name) = self.identity.registry().sendable(channel) else {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("channel {channel} is not registered on this node"),
            ));
        };
        let channel: &str = &name;
        let now = self.clock.now();
        let deadline = now + timeout;
        let call = OutboundCall {
            hops: 0,
            command,
            target: channel,
            packet,
            fence: None,
            session: None,
            push: None,
            // One operation for every candidate a select-one tries before one accepts.
            operation: Some(self.next_operation()),
            metadata: &options.metadata,
            payload,
        };
        let mut excluded = Vec::new();
        let mut admit_by = deadline.min(now + self.settings.send_timeout);
        loop {
            let link = match self.peers.select(channel, &excluded) {
                Some(link) => link,
                None => {
                    let link = self.select(channel, deadline, &excluded).await?;
                    // Time spent waiting for a candidate does not count against admission.
                    admit_by = deadline.min(self.clock.now() + self.settings.send_timeout);
                    link
                }
            };
            let queued = if request {
                self.request_on(&link, &call, deadline, timeout, admit_by)
                    .await
            } else {
                self.send_on(&link, &call, deadline)
                    .await
                    .map(|()| Ok(Bytes::new()))
            };
            match queued {
                Ok(result) => return result,
                Err(Refused::Failed(e)) => return Err(e),
                Err(Refused::Closed) => {
                    self.links.lost(link.conn().id(), "send failed");
                    excluded.push(link.conn().id());
                }
            }
        }
    }

    /// A node-direct call to exactly `rid`; never redirected to another node.
    pub(crate) async fn call_node(
        &self,
        rid: &str,
        request: bool,
        packet: &str,
        payload: Bytes,
        options: &crate::CallOptions,
    ) -> Result<Bytes> {
        let (command, timeout) = self.prepare(
            request,
            packet,
            (Command::NodeSend, Command::NodeRequest),
            options,
        )?;
        let deadline = self.clock.now() + timeout;
        let admit_by = deadline.min(self.clock.now() + self.settings.send_timeout);
        let link = self
            .peer(rid, if request { admit_by } else { deadline })
            .await?;
        let call = OutboundCall {
            hops: 0,
            command,
            target: "",
            packet,
            fence: None,
            session: None,
            push: None,
            // One operation for every candidate a select-one tries before one accepts.
            operation: Some(self.next_operation()),
            metadata: &options.metadata,
            payload,
        };
        if request {
            self.request(&link, &call, deadline, timeout, admit_by)
                .await
        } else {
            self.send(&link, &call, deadline)
                .await
                .map(|()| Bytes::new())
        }
    }
}
