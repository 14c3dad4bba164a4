//! Links driven without sockets: a recording connection stands in for the transport, and
//! frames go straight to the inbound path.

use std::sync::{Arc, Mutex};

use bytes::Bytes;

use super::conn_state::PhaseKind;
use super::inbound::on_frames;
use crate::link::{ConnId, Connection, Frames, LinkError, TrySendError};
use crate::mesh::MeshNode;
use crate::wire::{
    Admission, CallHead, CallMessage, Command, ControlHeader, Envelope, RejectReason, WireName,
    PROTOCOL_MAJOR,
};

/// A connection that records what the node queues on it.
pub(crate) struct Recording {
    id: ConnId,
    sent: Mutex<Vec<Frames>>,
    closed: std::sync::atomic::AtomicBool,
}

impl Recording {
    pub(crate) fn new(id: ConnId) -> Arc<Recording> {
        Arc::new(Recording {
            id,
            sent: Mutex::new(Vec::new()),
            closed: Default::default(),
        })
    }

    pub(crate) fn sent(&self) -> Vec<Envelope> {
        self.sent
            .lock()
            .expect("not poisoned")
            .iter()
            .map(|f| Envelope::decode(f).expect("the node sends valid envelopes"))
            .collect()
    }
}

#[async_trait::async_trait]
impl Connection for Recording {
    fn id(&self) -> ConnId {
        self.id
    }
    async fn send(&self, frames: Frames) -> Result<(), LinkError> {
        self.sent.lock().expect("not poisoned").push(frames);
        Ok(())
    }
    fn try_send(&self, frames: Frames) -> Result<(), TrySendError> {
        self.sent.lock().expect("not poisoned").push(frames);
        Ok(())
    }
    fn close(&self) {
        self.closed
            .store(true, std::sync::atomic::Ordering::Release);
    }
    fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::Acquire)
    }
}

pub(crate) fn node() -> Arc<MeshNode> {
    let config = crate::Runtime::builder()
        .mesh_name("m")
        .rid("me")
        .listen("tcp://127.0.0.1:0")
        .build()
        .expect("valid settings");
    MeshNode::new(config.settings.mesh, None)
}

pub(crate) fn hello(rid: &str, mesh: &str) -> Frames {
    Envelope::control(
        Command::Hello,
        ControlHeader {
            admission: Some(Admission {
                mesh_name: mesh.into(),
                rid: rid.into(),
                generation: 5,
                revision: 1,
                protocol: PROTOCOL_MAJOR,
                endpoint: String::new(),
                channels: vec![("greet".into(), 100)],
                max_message: None,
            }),
            ..ControlHeader::default()
        },
    )
    .encode()
}

pub(crate) fn request(channel: &str) -> Frames {
    Envelope::Call(CallMessage {
        command: Command::ChannelRequest,
        head: CallHead {
            correlation: 9,
            operation: 9,
            deadline_ms: 1000,
            hops: 0,
            target: WireName::new(Bytes::copy_from_slice(channel.as_bytes())).expect("valid"),
            packet: WireName::new(Bytes::from_static(b"Greet")).expect("valid"),
            fence: None,
            session: None,
            topic: None,
            push: None,
        },
        metadata: Default::default(),
        payload: Bytes::new(),
    })
    .encode()
}

#[tokio::test]
async fn a_hello_is_admitted_and_the_peer_is_selectable_once_the_admit_is_queued() {
    let node = node();
    let conn = Recording::new(1);
    let as_dyn: Arc<dyn Connection> = conn.clone();
    on_frames(node.links(), &as_dyn, hello("p", "m"), false);
    let sent = conn.sent();
    assert!(matches!(
        &sent[..],
        [Envelope::Control { command: Command::Admit, header }] if header.admission.as_ref().is_some_and(|a| a.rid == "me")
    ));
    assert_eq!(node.links().phase(1), PhaseKind::Ready);
    let picked = node.peers().select("greet", &[]).expect("selectable");
    assert_eq!(&**picked.rid(), "p");
}

#[tokio::test]
async fn garbage_before_admission_gets_one_reject_carrying_only_its_reason() {
    let node = node();
    let conn = Recording::new(2);
    let as_dyn: Arc<dyn Connection> = conn.clone();
    on_frames(
        node.links(),
        &as_dyn,
        vec![Bytes::from_static(b"junk")],
        false,
    );
    on_frames(
        node.links(),
        &as_dyn,
        vec![Bytes::from_static(b"more junk")],
        false,
    );
    let sent = conn.sent();
    assert_eq!(sent.len(), 1, "a rejected connection is not answered again");
    let Envelope::Control { command, header } = &sent[0] else {
        panic!("a control record");
    };
    assert_eq!(*command, Command::Reject);
    assert_eq!(header.reject, Some(RejectReason::InvalidDescriptor));
    assert_eq!(header.admission, None, "nothing about this node leaks");
    assert_eq!(node.links().phase(2), PhaseKind::Rejected);
}

#[tokio::test]
async fn a_call_before_hello_is_refused_and_another_mesh_is_a_topology_mismatch() {
    let node = node();
    let early = Recording::new(3);
    let as_dyn: Arc<dyn Connection> = early.clone();
    on_frames(node.links(), &as_dyn, request("greet"), false);
    assert!(matches!(
        &early.sent()[..],
        [Envelope::Control { command: Command::Reject, header }] if header.reject == Some(RejectReason::InvalidDescriptor)
    ));
    let stranger = Recording::new(4);
    let as_dyn: Arc<dyn Connection> = stranger.clone();
    on_frames(node.links(), &as_dyn, hello("p", "another-mesh"), false);
    assert!(matches!(
        &stranger.sent()[..],
        [Envelope::Control { command: Command::Reject, header }] if header.reject == Some(RejectReason::TopologyMismatch)
    ));
    assert!(node.peers().link("p").is_none());
}

/// Hands `frames` to `node` as if they arrived on `conn`.
pub(crate) fn arrive(node: &MeshNode, conn: &Arc<dyn Connection>, frames: Frames) {
    on_frames(node.links(), conn, frames, false);
}
