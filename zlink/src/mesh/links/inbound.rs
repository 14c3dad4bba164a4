//! What arrives on a connection: size cap and bounded decoding first, then the handshake
//! for connections not admitted yet; for admitted ones, the role policy, then liveness,
//! updates, replies to the pending table, and application commands through the node-wide
//! admission checks to the [`Dispatcher`](crate::mesh::dispatch::Dispatcher).

use std::sync::Arc;

use bytes::Bytes;

use super::admission;
use super::conn_state::PhaseKind;
use super::{Links, ReadySender};
use crate::link::{Connection, Frames};
use crate::mesh::count_permit::CountPermit;
use crate::mesh::dispatch::{InboundCall, ReplyRoute};
use crate::mesh::peer_table::UpdateOutcome;
use crate::telemetry::Dropped;
use crate::wire::{
    CallMessage, Command, ControlHeader, Envelope, RejectReason, ReplyOutcome, WireError,
};
use crate::{Error, ErrorKind};

pub(super) fn on_frames(
    links: &Arc<Links>,
    conn: &Arc<dyn Connection>,
    frames: Frames,
    dialed: bool,
) {
    let max = links.identity().max_message();
    let size: usize = frames.iter().map(Bytes::len).sum();
    links.meter.received(size);
    if size > max {
        return on_oversize(links, conn, &frames, size);
    }
    let envelope = match Envelope::decode(&frames) {
        Ok(e) => e,
        Err(e) => return on_malformed(links, conn, e, dialed),
    };
    let Some(sender) = links.ready_sender(conn, dialed) else {
        return on_unadmitted(links, conn, envelope);
    };
    let command = envelope.command();
    if !links.policy().accepts(command) {
        tracing::warn!(peer = %sender.link.rid(), ?command, topology = ?links.policy().topology(), "protocol_error: command not allowed in this direction; closing");
        return links.lost(conn.id(), "command not allowed in this direction");
    }
    match envelope {
        Envelope::Reply {
            correlation,
            operation,
            outcome,
        } => on_reply(links, conn, (correlation, operation), outcome),
        Envelope::Call(call) => on_call(links, sender, call),
        Envelope::Control { command, header } => on_control(links, conn, &sender, command, header),
    }
}

fn on_control(
    links: &Links,
    conn: &Arc<dyn Connection>,
    sender: &ReadySender,
    command: Command,
    header: ControlHeader,
) {
    let rid = sender.link.rid();
    match command {
        Command::LivenessProbe => {
            let ack = ControlHeader {
                probe: header.probe,
                ..ControlHeader::default()
            };
            links.send_control(conn, Command::LivenessAck, ack);
        }
        Command::LivenessAck => links.ack_probe(conn.id(), header.probe),
        Command::Update => {
            let Some(adm) = header.admission else { return };
            if adm.channels.len() > super::admission::MAX_ADVERTISED_CHANNELS {
                tracing::warn!(peer = %rid, channels = adm.channels.len(), "protocol_error: update advertises too many channels; closing");
                return links.lost(conn.id(), "too many channels in update");
            }
            match links.peers().update(conn.id(), adm) {
                UpdateOutcome::Applied => tracing::info!(peer = %rid, "peer weights updated"),
                UpdateOutcome::Stale => tracing::debug!(peer = %rid, "stale update ignored"),
                UpdateOutcome::Unknown => {}
                UpdateOutcome::IdentityChanged => {
                    tracing::warn!(peer = %rid, "update changed identity or generation: protocol error");
                    links.lost(conn.id(), "protocol error in update");
                }
            }
        }
        other => {
            tracing::warn!(peer = %rid, command = ?other, "handshake command on a ready connection ignored");
        }
    }
}

/// A message over this node's size cap: refused before decoding; a request gets an error
/// reply when its correlation can be read from the head.
fn on_oversize(links: &Links, conn: &Arc<dyn Connection>, frames: &Frames, size: usize) {
    let max = links.identity().max_message();
    links.meter.dropped(Dropped::Oversize);
    tracing::warn!(
        conn = conn.id(),
        size,
        max,
        "protocol_error: message over the size cap dropped"
    );
    // The head alone, with an empty payload frame, tells a request's correlation.
    let head_only: Frames = frames
        .iter()
        .take(1)
        .cloned()
        .chain(std::iter::once(Bytes::new()))
        .collect();
    let request = match Envelope::decode(&head_only) {
        Ok(Envelope::Call(call)) if call.command.is_request() => {
            Some((call.head.correlation, call.head.operation))
        }
        Err(e) if e.command.is_some_and(Command::is_request) => {
            e.correlation.map(|c| (c, e.operation))
        }
        _ => None,
    };
    if let (PhaseKind::Ready, Some((correlation, operation))) = (links.phase(conn.id()), request) {
        let err = Error::new(
            ErrorKind::CapacityExceeded,
            format!("message of {size} bytes exceeds the receiver's cap of {max} bytes"),
        );
        let route = ReplyRoute {
            conn: conn.clone(),
            correlation,
            operation,
        };
        links.reply(&route, Err(err));
    }
}

fn on_unadmitted(links: &Links, conn: &Arc<dyn Connection>, envelope: Envelope) {
    let dialed = match links.phase(conn.id()) {
        PhaseKind::Rejected => return,
        PhaseKind::AwaitAdmit { .. } => true,
        _ => false,
    };
    let (command, header) = match envelope {
        Envelope::Control { command, header } => (command, header),
        other => (other.command(), ControlHeader::default()),
    };
    match (command, dialed) {
        (Command::Hello, false) => match header.admission {
            Some(adm) => admission::on_hello(links, conn, adm),
            None => admission::reject(
                links,
                conn,
                RejectReason::InvalidDescriptor,
                "hello without admission",
            ),
        },
        // We dialed and said hello: only admit or reject may answer. A hello back would
        // skip the checks of the RID and generation we expect.
        (Command::Hello, true) => {
            tracing::warn!(conn = conn.id(), "hello in answer to our dial: refused");
            admission::refuse_dial(links, conn, "hello in answer to a dial");
        }
        (Command::Admit, true) => match header.admission {
            Some(adm) => admission::on_admit(links, conn, adm),
            None => admission::refuse_dial(links, conn, "admit without admission"),
        },
        (Command::Admit, false) => {
            tracing::warn!(
                conn = conn.id(),
                "admit on a connection we did not dial; closing"
            );
            links.lost(conn.id(), "unexpected admit");
        }
        (Command::Reject, true) => admission::on_reject(links, conn, header),
        (Command::Reject, false) => links.lost(conn.id(), "unexpected reject"),
        (other, _) => {
            tracing::warn!(conn = conn.id(), command = ?other, "message before admission dropped");
            if admission::awaits_hello(links, conn) {
                admission::reject(
                    links,
                    conn,
                    RejectReason::InvalidDescriptor,
                    "expected hello",
                );
            }
        }
    }
}

fn on_malformed(links: &Links, conn: &Arc<dyn Connection>, error: WireError, dialed: bool) {
    let phase = links.phase(conn.id());
    if phase == PhaseKind::Rejected {
        return;
    }
    links.meter.dropped(Dropped::Malformed);
    tracing::warn!(conn = conn.id(), reason = %error.reason, "protocol_error");
    let admitted = phase == PhaseKind::Ready;
    let is_request = error.command.is_some_and(Command::is_request);
    match (admitted, error.correlation) {
        (true, Some(correlation)) if is_request => {
            let err = Error::new(ErrorKind::ProtocolError, error.reason);
            let route = ReplyRoute {
                conn: conn.clone(),
                correlation,
                operation: error.operation,
            };
            links.reply(&route, Err(err));
        }
        (true, _) => {}
        // Garbage from a server we dialed: nothing to reject, the dial failed.
        (false, _) if dialed => admission::refuse_dial(links, conn, "malformed answer to our dial"),
        (false, _) => {
            links.ensure_accepted(conn);
            admission::reject(links, conn, RejectReason::InvalidDescriptor, &error.reason);
        }
    }
}

fn on_reply(
    links: &Links,
    conn: &Arc<dyn Connection>,
    (correlation, operation): (u64, u64),
    outcome: ReplyOutcome,
) {
    let result = match outcome {
        ReplyOutcome::Ok(payload) => Ok(payload),
        ReplyOutcome::Failed {
            kind,
            detail,
            refusal,
        } => {
            let error = Error::new(
                ErrorKind::from_code(kind).unwrap_or(ErrorKind::InternalFailure),
                detail,
            );
            match refusal.and_then(crate::Refusal::from_code) {
                Some(refusal) => Err(error.with_refusal(refusal)),
                None => Err(error),
            }
        }
    };
    if !links
        .pending()
        .complete((correlation, operation), conn.id(), result)
    {
        tracing::debug!(
            correlation,
            operation,
            conn = conn.id(),
            "late or foreign reply discarded"
        );
    }
}

/// An application command from an admitted peer: the node-wide admission checks, then the
/// route registered for the command.
fn on_call(links: &Arc<Links>, sender: ReadySender, call: CallMessage) {
    let rid = sender.link.rid().clone();
    let refuse = |err: Error| {
        if call.command.is_request() {
            let route = ReplyRoute {
                conn: sender.link.conn().clone(),
                correlation: call.head.correlation,
                operation: call.head.operation,
            };
            links.reply(&route, Err(err));
        }
    };
    if !links.identity().is_running() {
        if !call.command.is_request() {
            if links.dropped_while_stopping() {
                tracing::warn!(peer = %rid, packet = %call.head.packet, "drop: send arrived during shutdown (later ones are logged at debug)");
            } else {
                tracing::debug!(peer = %rid, packet = %call.head.packet, "drop: send arrived during shutdown");
            }
        }
        return refuse(Error::new(
            ErrorKind::ShuttingDown,
            "the target node is shutting down",
        ));
    }
    let Some(route) = links.dispatcher().route(call.command) else {
        tracing::warn!(peer = %rid, command = ?call.command, "no_handler: no route for the command");
        return refuse(Error::new(
            ErrorKind::NotFound,
            format!("this node has no route for {:?}", call.command),
        ));
    };
    // One peer cannot occupy the node: past its share of concurrent handler calls, a
    // request is answered at once and a send is dropped.
    let cap = links.settings().limits.max_inflight_per_connection;
    let Some(permit) = CountPermit::take(sender.inflight.clone(), cap) else {
        tracing::warn!(peer = %rid, packet = %call.head.packet, "capacity_exceeded: too many handler calls in flight for this connection");
        return refuse(Error::new(
            ErrorKind::CapacityExceeded,
            "too many requests in flight on this connection",
        ));
    };
    route.deliver(InboundCall::new(links.clone(), sender.link, call, permit));
}
