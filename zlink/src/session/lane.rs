//! A session's serial lane: `on_connected`, then each packet in arrival order, the
//! binding notices, and `on_disconnected` last. One at a time, on one task.

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc;

use super::context::SessionContext;
use super::incoming::Packet;
use super::packet::{CloseReason, Flow, StreamCodec};
use super::peer::ReplyToken;
use super::peer::{answer_error, error_parts, AfterHandler, SessionPeer};
use super::session_type::DynSession;
use super::table::PacketTable;
use crate::call::PacketKind;
use crate::handle::Handle;
use crate::mesh::traced::InboundTrace;
use crate::wire::trace_context::{TraceContext, TRACEPARENT};
use crate::{Error, ErrorKind, Metadata};

/// What the lane runs, in order.
pub(crate) enum LaneEvent {
    /// An application packet the read loop admitted. Boxed: the channel allocates its
    /// slots up front, and a pointer a slot keeps an idle session small.
    Packet(Box<AdmittedPacket>),
    /// What the client sent ends the session (it closed, or broke the format): the
    /// packets read before it are handled first, then the session closes.
    Close(CloseReason, String),
}

/// An application packet the read loop admitted.
pub(crate) struct AdmittedPacket {
    pub(crate) name: String,
    pub(crate) codec: StreamCodec,
    pub(crate) metadata: Metadata,
    pub(crate) payload: Bytes,
    pub(crate) flow: Option<Flow>,
    pub(crate) request_seq: Option<u64>,
}

/// How long after its binding-replaced callback a session closes (reference §6.4).
const REPLACED_CLOSE_DELAY: std::time::Duration = std::time::Duration::from_millis(100);

pub(crate) async fn run_lane(
    peer: Arc<SessionPeer>,
    mut session: Box<dyn DynSession>,
    table: Arc<PacketTable>,
    handle: Handle,
    mut events: mpsc::Receiver<LaneEvent>,
) {
    let ctx = SessionContext {
        peer: peer.clone(),
        handle,
    };
    if let Err(e) = session.on_connected(&ctx).await {
        peer.close(
            CloseReason::ServerDrain,
            &format!("the session refused the connection: {e}"),
        );
    }
    loop {
        let event = tokio::select! {
            biased;
            // A closing session takes no more application packets.
            _ = peer.outbound.closing_started() => break,
            _ = peer.replaced_notice() => {
                for actor in peer.take_replaced() {
                    session.on_actor_binding_replaced(&ctx, actor).await;
                }
                // The callback may still tell the client; then the connection closes.
                let closing = peer.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(REPLACED_CLOSE_DELAY).await;
                    closing.close(
                        CloseReason::ServerDrain,
                        "the session's Actor binding moved to another session",
                    );
                });
                continue;
            }
            event = events.recv() => event,
        };
        let Some(event) = event else { break };
        match event {
            LaneEvent::Close(reason, diagnostic) => peer.close(reason, &diagnostic),
            LaneEvent::Packet(admitted) => {
                let AdmittedPacket {
                    name,
                    codec,
                    metadata,
                    payload,
                    flow,
                    request_seq,
                } = *admitted;
                if peer.is_replaced() {
                    // Closing since a binding moved away: no more application dispatch.
                    if let Some(seq) = request_seq {
                        if peer.finish_request(seq) {
                            answer_error(
                                &peer,
                                Some(seq),
                                ErrorKind::Unavailable,
                                "the session is closing: its Actor binding moved to another session",
                            );
                        }
                    }
                    continue;
                }
                let trace = packet_trace(&ctx.handle, &name, &metadata, flow.as_ref());
                let packet = Packet {
                    name,
                    codec,
                    metadata,
                    payload,
                    flow,
                    request_seq,
                    reply: request_seq.map(|seq| ReplyToken::new(peer.clone(), seq)),
                };
                trace
                    .run(dispatch(&peer, session.as_mut(), &table, &ctx, packet))
                    .await;
            }
        }
    }
    let reason = peer
        .outbound
        .closing()
        .unwrap_or(CloseReason::TransportError);
    session.on_disconnected(&ctx, reason).await;
    disconnect_bindings(&peer).await;
}

/// The span and trace context of one client packet: the `traceparent` its metadata
/// carries, or, for a packet that names only a flow, a new trace in the client's flow.
fn packet_trace(
    handle: &Handle,
    name: &str,
    metadata: &Metadata,
    flow: Option<&Flow>,
) -> InboundTrace {
    let node = handle.node();
    let propagation = node.settings().trace_propagation.as_deref();
    let flow_only = match (flow, metadata.get(TRACEPARENT)) {
        (Some(flow), None) => Some(
            TraceContext {
                flow_id: flow.id.clone(),
                ..TraceContext::new_trace()
            }
            .carried(),
        ),
        _ => None,
    };
    let metadata = flow_only.as_ref().unwrap_or(metadata);
    InboundTrace::of(node.identity(), propagation, "session", name, metadata)
}

/// How long a closed session's disconnect notices may take, all together.
const DISCONNECT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);

/// Tells the owner of every Actor still bound to the closed session, over the stored
/// routes, all at once: one that fails does not stop the others.
async fn disconnect_bindings(peer: &SessionPeer) {
    let routes = peer.bindings.all();
    if routes.is_empty() {
        return;
    }
    let Some(objects) = peer.objects.as_ref().and_then(std::sync::Weak::upgrade) else {
        return;
    };
    let deadline = tokio::time::Instant::now() + DISCONNECT_DEADLINE;
    let session = peer.id.get();
    let told = futures::future::join_all(
        routes
            .iter()
            .map(|route| objects.disconnect_session(route, session, deadline)),
    );
    let results = match tokio::time::timeout_at(deadline, told).await {
        Ok(results) => results,
        Err(_) => {
            tracing::debug!(session = %peer.id, "disconnect notices ran out of time");
            return;
        }
    };
    for (route, result) in routes.iter().zip(results) {
        if let Err(e) = result {
            tracing::debug!(session = %peer.id, actor = %route.key, error = %e, "disconnect notice not delivered");
        }
    }
}

async fn dispatch(
    peer: &SessionPeer,
    session: &mut dyn DynSession,
    table: &PacketTable,
    ctx: &SessionContext,
    packet: Packet,
) {
    let seq = packet.request_seq;
    let name = packet.name.clone();
    let result = match table.find(&packet.name) {
        Some((_, PacketKind::Request)) if seq.is_none() => Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("packet {name:?} is a request: send it with a request sequence"),
        )),
        Some((_, PacketKind::Send)) if seq.is_some() => Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("packet {name:?} is one-way: send it without a request sequence"),
        )),
        Some((handler, _)) => session.handle(ctx, handler, packet).await,
        None => session.on_packet(ctx, packet).await,
    };
    match seq {
        Some(seq) => match (peer.after_handler(seq), result) {
            (AfterHandler::Answered, _) => {}
            (AfterHandler::Dropped, Ok(())) => answer_error(
                peer,
                Some(seq),
                ErrorKind::InternalFailure,
                &format!("the handler of {name:?} returned without answering"),
            ),
            (AfterHandler::Dropped, Err(e)) => {
                let (kind, message) = error_parts(&e);
                answer_error(peer, Some(seq), kind, &message);
            }
            (AfterHandler::Alive, Err(e)) => {
                // The token lives on, but the handler failed: the failure answers, and the
                // token finds its request answered.
                if peer.finish_request(seq) {
                    let (kind, message) = error_parts(&e);
                    answer_error(peer, Some(seq), kind, &message);
                }
            }
            (AfterHandler::Alive, Ok(())) => {}
        },
        None => {
            if let Err(e) = result {
                let (kind, message) = error_parts(&e);
                answer_error(peer, None, kind, &format!("packet {name:?}: {message}"));
            }
        }
    }
}
