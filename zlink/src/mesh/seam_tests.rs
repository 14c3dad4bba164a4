//! The seams, driven by a subsystem defined here: it registers an [`InboundRoute`] for a
//! command no built-in subsystem owns, and calls through the outbound API.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use super::calls::OutboundCall;
use super::{InboundCall, InboundRoute};
use crate::wire::{Command, Metadata};
use crate::{ErrorKind, PeerSpec, Runtime};

// ANCHOR: route
/// A subsystem of its own: answers Spot requests with the payload reversed and remembers
/// what it saw.
#[derive(Default)]
struct ReverseRoute {
    seen: Mutex<Vec<(String, String, Vec<u8>)>>,
}

impl InboundRoute for ReverseRoute {
    fn deliver(&self, call: InboundCall) {
        let message = call.message();
        if let Ok(mut seen) = self.seen.lock() {
            seen.push((
                call.from().rid().to_string(),
                message.head.packet.as_str().to_string(),
                message.payload.to_vec(),
            ));
        }
        let mut reversed = message.payload.to_vec();
        reversed.reverse();
        call.run(move |_message| Box::pin(async move { Ok(Bytes::from(reversed)) }));
    }
}
// ANCHOR_END: route

async fn node(rid: &str, peer: Option<String>) -> Runtime {
    let mut builder = Runtime::builder()
        .mesh_name("seams")
        .rid(rid)
        .listen("tcp://127.0.0.1:0");
    if let Some(endpoint) = peer {
        builder = builder.peer(PeerSpec::new(endpoint).expect_rid("b"));
    }
    builder
        .build()
        .expect("valid settings")
        .start()
        .await
        .expect("starts")
}

#[tokio::test]
async fn a_subsystem_registers_an_inbound_route_and_receives_its_command() {
    let b = node("b", None).await;
    let a = node("a", Some(b.endpoint())).await;
    a.nodes()
        .wait_for(Duration::from_secs(5), |p| p.len() == 1)
        .await
        .expect("a reaches b");
    let metadata = Metadata::new();
    let call = OutboundCall {
        hops: 0,
        command: Command::SpotRequest,
        target: "spot-1",
        packet: "Reverse",
        fence: Some(crate::wire::RouteFence {
            object_generation: 1,
            owner_generation: 1,
            lease_generation: 1,
        }),
        session: None,
        push: None,
        operation: None,
        metadata: &metadata,
        payload: Bytes::from_static(b"abc"),
    };
    let timeout = Duration::from_secs(5);
    let request = |node: &Runtime| {
        let node = node.handle().node().clone();
        let call = OutboundCall {
            payload: call.payload.clone(),
            ..call
        };
        async move {
            let until = Instant::now() + timeout;
            let calls = node.calls();
            let link = calls.peer("b", until).await?;
            calls.request(&link, &call, until, timeout, until).await
        }
    };

    // No subsystem owns the command yet: the request ends NotFound, it is not lost.
    let before = request(&a).await.expect_err("no route yet");
    assert!(before.is(ErrorKind::NotFound), "{before}");

    // ANCHOR: register
    let route = Arc::new(ReverseRoute::default());
    b.handle()
        .node()
        .dispatcher()
        .register(Command::SpotRequest, route.clone())
        .expect("the command is free");
    // ANCHOR_END: register
    let reply = request(&a).await.expect("the route answers");
    assert_eq!(reply, Bytes::from_static(b"cba"));
    let seen = route.seen.lock().expect("not poisoned").clone();
    assert_eq!(seen, vec![("a".into(), "Reverse".into(), b"abc".to_vec())]);

    // One route per command: a second registration is refused, the first stays.
    let again = b
        .handle()
        .node()
        .dispatcher()
        .register(Command::SpotRequest, Arc::new(ReverseRoute::default()));
    assert!(again.is_err());
    assert!(b
        .handle()
        .node()
        .dispatcher()
        .register(Command::ChannelRequest, Arc::new(ReverseRoute::default()))
        .is_err());
    assert_eq!(request(&a).await.expect("still answered"), "cba");

    a.shutdown().await;
    b.shutdown().await;
}
