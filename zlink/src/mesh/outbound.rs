//! Outbound calls: select-one for channels, exact RID for node-direct; queue admission,
//! pending replies and the one deadline.

use std::sync::Arc;

use bytes::Bytes;
use tokio::time::Instant;

use super::node::{lock, MeshNode};
use super::select::Candidate;
use crate::call::CallOptions;
use crate::link::Connection;
use crate::wire::{Command, Envelope, Header};
use crate::{Error, ErrorKind, Result};

/// Where an outbound message goes.
pub(crate) enum Target<'a> {
    Channel(&'a str),
    Node(&'a str),
}

/// The longest a ClientServer call waits for a ready server.
const CANDIDATE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

fn deadline_exceeded(what: &str) -> Error {
    Error::new(ErrorKind::DeadlineExceeded, what.to_string())
}

impl MeshNode {
    fn ensure_running(&self) -> Result<()> {
        if self.is_running() {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::ShuttingDown,
                "the runtime is shutting down",
            ))
        }
    }

    /// Select-one among remote ready servers with weight > 0, skipping `excluded`.
    fn select(&self, channel: &str, excluded: &[String]) -> Option<Arc<dyn Connection>> {
        let peers = self.peers_read();
        let candidates: Vec<Candidate> = peers
            .iter()
            .filter(|(rid, _)| !excluded.contains(rid))
            .filter_map(|(rid, p)| {
                let weight = *p.channels.get(channel)?;
                Some(Candidate {
                    rid: rid.clone(),
                    weight,
                })
            })
            .collect();
        let rid = lock(&self.selectors)
            .entry(channel.to_string())
            .or_default()
            .pick(&candidates)?;
        peers.get(&rid).map(|p| p.conn.clone())
    }

    /// The connection to node `rid`, waiting (until `until`) when the RID is known but not
    /// ready.
    async fn node_conn(&self, rid: &str, until: Instant) -> Result<Arc<dyn Connection>> {
        loop {
            let changed = self.peers_changed.notified();
            if let Some(p) = self.peers_read().get(rid) {
                return Ok(p.conn.clone());
            }
            if !lock(&self.known_rids).contains(rid) {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!("node {rid} is not a member of this mesh"),
                ));
            }
            if tokio::time::timeout_at(until, changed).await.is_err() {
                return Err(Error::new(
                    ErrorKind::Unavailable,
                    format!("node {rid} is not connected"),
                ));
            }
            self.ensure_running()?;
        }
    }

    fn envelope(
        &self,
        target: &Target<'_>,
        request: bool,
        packet: &str,
        payload: Bytes,
        options: &CallOptions,
    ) -> Envelope {
        let (command, channel) = match (target, request) {
            (Target::Channel(c), true) => (Command::ChannelRequest, Some(c.to_string())),
            (Target::Channel(c), false) => (Command::ChannelSend, Some(c.to_string())),
            (Target::Node(_), true) => (Command::NodeRequest, None),
            (Target::Node(_), false) => (Command::NodeSend, None),
        };
        Envelope {
            command,
            header: Header {
                channel,
                packet: Some(packet.to_string()),
                ..Header::default()
            },
            metadata: Some(options.metadata.clone()),
            payload: Some(payload),
        }
    }

    /// Refuses a message over the smaller of this node's cap and the receiver's.
    fn check_size(&self, conn: &Arc<dyn Connection>, frames: &[Bytes]) -> Result<()> {
        let remote = self
            .peers_read()
            .values()
            .find(|p| p.conn_id() == conn.id())
            .and_then(|p| p.max_message)
            .and_then(|m| usize::try_from(m).ok());
        let local = self.link_limits().max_message;
        let cap = remote.map_or(local, |remote| remote.min(local));
        let size: usize = frames.iter().map(Bytes::len).sum();
        if size > cap {
            return Err(Error::InvalidArgument(format!(
                "message of {size} bytes exceeds the channel's max message size of {cap} bytes"
            )));
        }
        Ok(())
    }

    fn check_channel(&self, target: &Target<'_>) -> Result<()> {
        if let Target::Channel(channel) = target {
            if !self.registry.can_send(channel) {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!("channel {channel} is not registered on this node"),
                ));
            }
        }
        Ok(())
    }

    /// Queues `frames` on a target's connection. For channels, a target whose connection
    /// refuses before accepting is replaced by another eligible one.
    async fn submit(
        &self,
        target: &Target<'_>,
        deadline: Instant,
        admit_within: std::time::Duration,
        mut frames_for: impl FnMut(&Arc<dyn Connection>) -> Vec<Bytes>,
    ) -> Result<Arc<dyn Connection>> {
        let mut excluded = Vec::new();
        let mut admit_by = deadline.min(Instant::now() + admit_within);
        // ClientServer waits for a ready candidate (admission already in progress) up to
        // min(the call's time, 5 s); RouteMesh fails at once.
        let wait_for_candidate = (self.topology() == crate::config::Topology::ClientServerClient)
            .then(|| deadline.min(Instant::now() + CANDIDATE_WAIT));
        loop {
            let conn = match target {
                Target::Channel(channel) => match self.select(channel, &excluded) {
                    Some(conn) => conn,
                    None => {
                        let changed = self.peers_changed.notified();
                        match wait_for_candidate {
                            Some(until) if Instant::now() < until => {
                                if self.select(channel, &excluded).is_none() {
                                    let _ = tokio::time::timeout_at(until, changed).await;
                                }
                                self.ensure_running()?;
                                admit_by = deadline.min(Instant::now() + admit_within);
                                continue;
                            }
                            _ => {
                                return Err(Error::new(
                                    ErrorKind::NotFound,
                                    format!(
                                        "no ready server with weight > 0 for channel {channel}"
                                    ),
                                ))
                            }
                        }
                    }
                },
                Target::Node(rid) => self.node_conn(rid, admit_by).await?,
            };
            let frames = frames_for(&conn);
            self.check_size(&conn, &frames)?;
            // Usually the queue has room: only arm the admission timer when it has not.
            let admitted = {
                let mut queued = conn.send(frames);
                match super::inbound::poll_once(&mut queued) {
                    Some(done) => Ok(done),
                    None => tokio::time::timeout_at(admit_by, queued).await,
                }
            };
            match admitted {
                Ok(Ok(())) => return Ok(conn),
                Err(_) => {
                    return Err(deadline_exceeded(
                        "the local send queue did not accept in time",
                    ))
                }
                Ok(Err(_)) => match target {
                    Target::Channel(_) => {
                        let rid = self
                            .peers_read()
                            .iter()
                            .find(|(_, p)| p.conn_id() == conn.id())
                            .map(|(r, _)| r.clone());
                        excluded.extend(rid);
                        self.connection_lost(conn.id(), "send failed");
                    }
                    Target::Node(rid) => {
                        return Err(Error::new(
                            ErrorKind::Unavailable,
                            format!("connection to node {rid} closed"),
                        ));
                    }
                },
            }
        }
    }

    /// One-way send: completes when the local queue accepts.
    pub(crate) async fn send(
        &self,
        target: Target<'_>,
        packet: &str,
        payload: Bytes,
        options: CallOptions,
    ) -> Result<()> {
        self.ensure_running()?;
        self.check_channel(&target)?;
        let within = options.timeout.unwrap_or(self.settings.send_timeout);
        let deadline = Instant::now() + within;
        let frames = self
            .envelope(&target, false, packet, payload, &options)
            .encode();
        self.submit(&target, deadline, within, |_| frames.clone())
            .await
            .map(|_| ())
    }

    /// Request: exactly one terminal result by the one deadline.
    pub(crate) async fn request(
        &self,
        target: Target<'_>,
        packet: &str,
        payload: Bytes,
        options: CallOptions,
    ) -> Result<Bytes> {
        self.ensure_running()?;
        self.check_channel(&target)?;
        let timeout = options.timeout.unwrap_or(self.settings.request_timeout);
        let deadline = Instant::now() + timeout;

        let mut envelope = self.envelope(&target, true, packet, payload, &options);
        let mut registered = None;
        let conn = self
            .submit(&target, deadline, self.settings.send_timeout, |conn| {
                let (guard, rx) = self.pending.register(conn.id());
                envelope.header.correlation = guard.correlation;
                // The budget left at submission, not the full timeout: a request that
                // waited for a candidate or for queue room tells the server so.
                let remaining = deadline.saturating_duration_since(Instant::now());
                envelope.header.deadline_ms =
                    Some(remaining.as_millis().min(u128::from(u64::MAX)) as u64);
                registered = Some((guard, rx));
                envelope.encode()
            })
            .await;
        conn?;
        let (guard, rx) = registered
            .ok_or_else(|| Error::new(ErrorKind::InternalFailure, "request not registered"))?;
        let outcome = tokio::time::timeout_at(deadline, rx).await;
        drop(guard);
        match outcome {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(Error::new(
                ErrorKind::ShuttingDown,
                "the runtime stopped before the reply",
            )),
            Err(_) => Err(deadline_exceeded(&format!("no reply within {timeout:?}"))),
        }
    }
}
