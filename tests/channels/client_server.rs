//! ClientServer channel contracts over real TCP on 127.0.0.1.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::Instant;
use zeromq::prelude::*;
use zlink::{CallOptions, ClientServer, Error, ErrorKind, Runtime};
use zlink_testkit::{unused_endpoint, wait_until, RedisServer};
use zlink_tests::*;

const CS: &str = "pricing";

/// A node serving [`CS`] as a ClientServer server on its own listener at `listen`.
fn cs_server(rid: &str, listen: &str, weight: u32) -> zlink::RuntimeBuilder {
    node(rid).client_server(
        ClientServer::server(CS, echo_handlers(rid, Default::default()))
            .listen(listen)
            .weight(weight),
    )
}

fn cs_client(rid: &str, servers: &[&str]) -> zlink::RuntimeBuilder {
    let mut client = ClientServer::client(CS);
    for endpoint in servers {
        client = client.connect(*endpoint);
    }
    node(rid).client_server(client)
}

async fn wait_for_servers(client: &zlink::Handle, n: usize) {
    wait_until(
        WAIT,
        &format!("{n} ClientServer server(s) ready"),
        || async { client.channels().client_server_servers(CS).unwrap().len() == n },
    )
    .await;
}

async fn answered(client: &zlink::Handle) -> String {
    echo_client_on(client, CS)
        .echo(&Echo { text: "x".into() })
        .await
        .expect("answered")
        .by
}

fn echo_client_on(rt: &zlink::Handle, channel: &str) -> EchoServiceClient {
    EchoServiceClient::new(rt, channel)
}

#[tokio::test]
async fn a_client_calls_a_server_on_its_own_listener_and_gets_the_reply() {
    let server = start(cs_server("s", "tcp://127.0.0.1:0", 100)).await;
    let endpoint = server
        .channels()
        .client_server_endpoint(CS)
        .expect("listening");
    assert_ne!(
        endpoint,
        server.endpoint(),
        "its own listener, not the mesh ROUTER"
    );
    assert!(
        !endpoint.ends_with(":0"),
        "the real port is advertised: {endpoint}"
    );
    let client = start(cs_client("c", &[&endpoint])).await;
    wait_for_servers(&client, 1).await;
    assert_eq!(answered(&client).await, "s");
    let tagged = CallOptions::new().metadata("trace", "t-1").unwrap();
    let reply = echo_client_on(&client, CS)
        .echo(&Echo { text: "y".into() })
        .options(tagged)
        .await
        .unwrap();
    assert_eq!(reply.trace.as_deref(), Some("t-1"));
    stop([client, server]).await;
}

#[tokio::test]
async fn a_server_cannot_start_a_call_to_a_client() {
    // API: the Server role alone cannot call.
    let server = start(cs_server("s", "tcp://127.0.0.1:0", 100)).await;
    let err = echo_client_on(&server, CS)
        .echo(&Echo { text: "x".into() })
        .await
        .unwrap_err();
    assert!(err.is(ErrorKind::NotConfigured), "{err}");
    stop([server]).await;

    // Wire: a "server" that admits the client and then sends it a request is dropped.
    let mut fake = zeromq::RouterSocket::new();
    let endpoint = fake.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let client = start(cs_client("c", &[&endpoint])).await;
    let hello = tokio::time::timeout(WAIT, fake.recv())
        .await
        .unwrap()
        .unwrap();
    let identity = hello.get(0).unwrap().clone();
    let admission = zlink::wire::Admission {
        mesh_name: format!("cs:{CS}"),
        rid: "fake".into(),
        generation: 7,
        revision: 1,
        protocol: zlink::wire::PROTOCOL_MAJOR,
        endpoint: endpoint.clone(),
        channels: vec![(CS.into(), 100)],
        max_message: None,
    };
    let send = |frames: Vec<bytes::Bytes>| {
        let mut message = zeromq::ZmqMessage::from(identity.clone());
        for f in frames {
            message.push_back(f);
        }
        message
    };
    let admit = zlink::wire::Envelope::control(
        zlink::wire::Command::Admit,
        zlink::wire::ControlHeader {
            admission: Some(admission),
            ..Default::default()
        },
    );
    fake.send(send(admit.encode())).await.unwrap();
    wait_for_servers(&client, 1).await;
    let request = zlink::wire::Envelope::Call(zlink::wire::CallMessage {
        command: zlink::wire::Command::ChannelRequest,
        head: zlink::wire::CallHead {
            correlation: 1,
            operation: 1,
            deadline_ms: 30_000,
            hops: 0,
            target: zlink::wire::WireName::from_text(CS),
            packet: zlink::wire::WireName::from_text("Echo"),
            fence: None,
            session: None,
            topic: None,
            push: None,
        },
        metadata: Default::default(),
        payload: zlink::Message::encode(&Echo { text: "x".into() }).unwrap(),
    });
    fake.send(send(request.encode())).await.unwrap();
    wait_for_servers(&client, 0).await;
    stop([client]).await;
}

#[tokio::test]
async fn a_local_server_is_an_equal_candidate_reached_through_the_transport() {
    let remote = start(cs_server("r", "tcp://127.0.0.1:0", 100)).await;
    let remote_endpoint = remote.channels().client_server_endpoint(CS).unwrap();
    let local_endpoint = unused_endpoint();
    // One process holds both roles of the channel; its client lists its own server too.
    let both = start(
        node("l")
            .client_server(
                ClientServer::server(CS, echo_handlers("l", Default::default()))
                    .listen(&local_endpoint)
                    .weight(300),
            )
            .client_server(
                ClientServer::client(CS)
                    .connect(&local_endpoint)
                    .connect(&remote_endpoint),
            ),
    )
    .await;
    wait_for_servers(&both, 2).await;
    // The local server was admitted over a real connection, like the remote one.
    let ready: Vec<String> = both
        .channels()
        .client_server_servers(CS)
        .unwrap()
        .into_iter()
        .map(|p| p.rid)
        .collect();
    assert_eq!(ready, ["l", "r"]);
    let mut counts = BTreeMap::new();
    for _ in 0..8 {
        *counts.entry(answered(&both).await).or_insert(0) += 1;
    }
    assert_eq!(
        counts,
        BTreeMap::from([("l".to_string(), 6), ("r".to_string(), 2)])
    );
    stop([both, remote]).await;
}

#[tokio::test]
async fn with_no_ready_server_a_call_waits_then_fails_not_found() {
    let endpoint = unused_endpoint();
    let client = start(cs_client("c", &[&endpoint])).await;
    let started = Instant::now();
    let err = echo_client_on(&client, CS)
        .echo(&Echo { text: "x".into() })
        .options(CallOptions::new().timeout(Duration::from_millis(600)))
        .await
        .unwrap_err();
    assert!(err.is(ErrorKind::NotFound), "{err}");
    assert!(
        started.elapsed() >= Duration::from_millis(600),
        "waited {:?}",
        started.elapsed()
    );

    // A server that becomes ready during the wait takes the call.
    let waiting = tokio::spawn({
        let client = client.clone();
        async move { answered(&client).await }
    });
    let server = start(cs_server("s", &endpoint, 100)).await;
    assert_eq!(waiting.await.unwrap(), "s");
    stop([client, server]).await;
}

#[test]
fn a_channel_name_on_both_routemesh_and_client_server_is_a_startup_error() {
    let err = node("x")
        .channel_client(CS)
        .client_server(ClientServer::client(CS).connect("tcp://127.0.0.1:1"))
        .client_server(ClientServer::client(CS).connect("tcp://127.0.0.1:2"))
        .client_server(ClientServer::client("orphan"))
        .build()
        .err()
        .expect("invalid");
    let Error::Config(violations) = err else {
        panic!("{err}")
    };
    let problems: Vec<String> = violations
        .iter()
        .map(|v| format!("{}: {}", v.setting, v.problem))
        .collect();
    assert!(
        problems
            .iter()
            .any(|p| p.contains("also a RouteMesh channel")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("Client role registered twice")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("orphan") && p.contains("has no server")),
        "{problems:?}"
    );
}

#[tokio::test]
async fn an_oversize_message_is_refused_with_a_clear_error() {
    let server = start(node("s").client_server(
        ClientServer::server(CS, echo_handlers("s", Default::default())).max_message_size(1024),
    ))
    .await;
    let endpoint = server.channels().client_server_endpoint(CS).unwrap();
    let client = start(cs_client("c", &[&endpoint])).await;
    wait_for_servers(&client, 1).await;
    let big = Echo {
        text: "x".repeat(2000),
    };
    let err = echo_client_on(&client, CS).echo(&big).await.unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m.contains("max message size of 1024")),
        "{err}"
    );
    // Smaller messages still pass, on the same connection.
    assert_eq!(answered(&client).await, "s");
    stop([client, server]).await;
}

#[tokio::test]
async fn a_restarted_server_on_the_same_endpoint_is_a_new_lifecycle() {
    let endpoint = unused_endpoint();
    let first = start(cs_server("s", &endpoint, 100)).await;
    let client = start(cs_client("c", &[&endpoint])).await;
    wait_for_servers(&client, 1).await;
    let old = client.channels().client_server_servers(CS).unwrap()[0].generation;
    first.shutdown().await;
    let second = start(cs_server("s", &endpoint, 100)).await;
    wait_until(
        WAIT,
        "the client is connected to the new lifecycle",
        || async {
            client
                .channels()
                .client_server_servers(CS)
                .unwrap()
                .iter()
                .any(|p| p.generation != old)
        },
    )
    .await;
    assert_eq!(
        client.channels().client_server_servers(CS).unwrap().len(),
        1,
        "the old connection is gone"
    );
    assert_eq!(answered(&client).await, "s");
    stop([client, second]).await;
}

#[tokio::test]
async fn a_reply_after_its_request_ended_is_dropped() {
    let server = start(cs_server("s", "tcp://127.0.0.1:0", 100)).await;
    let endpoint = server.channels().client_server_endpoint(CS).unwrap();
    let client = start(cs_client("c", &[&endpoint])).await;
    wait_for_servers(&client, 1).await;
    let echo = echo_client_on(&client, CS);
    let err = echo
        .slow(&Slow { millis: 400 })
        .options(CallOptions::new().timeout(Duration::from_millis(100)))
        .await
        .unwrap_err();
    assert!(err.is(ErrorKind::DeadlineExceeded), "{err}");
    // The next request gets its own reply, never the late one.
    let next = echo.slow(&Slow { millis: 600 }).await.unwrap();
    assert_eq!(next.text, "slept 600");
    stop([client, server]).await;
}

#[tokio::test]
async fn weight_zero_drains_a_client_server_server() {
    let a = start(cs_server("a", "tcp://127.0.0.1:0", 100)).await;
    let b = start(cs_server("b", "tcp://127.0.0.1:0", 100)).await;
    let ea = a.channels().client_server_endpoint(CS).unwrap();
    let eb = b.channels().client_server_endpoint(CS).unwrap();
    let client = start(cs_client("c", &[&ea, &eb])).await;
    wait_for_servers(&client, 2).await;
    a.channels().set_weight(CS, 0).unwrap();
    assert_eq!(a.channels().weight(CS), Some(0));
    wait_until(WAIT, "the client sees weight 0", || async {
        client
            .channels()
            .client_server_servers(CS)
            .unwrap()
            .iter()
            .any(|p| p.rid == "a" && p.weight(CS) == Some(0))
    })
    .await;
    for _ in 0..4 {
        assert_eq!(answered(&client).await, "b");
    }
    stop([client, a, b]).await;
}

#[tokio::test]
async fn clients_find_servers_through_the_location_store() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let a = start(
        discovered_node("a", &store, quick_lease()).client_server(ClientServer::server(
            CS,
            echo_handlers("a", Default::default()),
        )),
    )
    .await;
    let b = start(
        discovered_node("b", &store, quick_lease()).client_server(ClientServer::server(
            CS,
            echo_handlers("b", Default::default()),
        )),
    )
    .await;
    let client = start(
        discovered_node("c", &store, quick_lease())
            .client_server(ClientServer::client(CS).discover()),
    )
    .await;
    wait_for_servers(&client, 2).await;
    let mut seen = std::collections::HashSet::new();
    for _ in 0..4 {
        seen.insert(answered(&client).await);
    }
    assert_eq!(seen.len(), 2);
    // A server that goes away is dropped once its descriptor is withdrawn.
    a.shutdown().await;
    wait_until(WAIT, "only b remains", || async {
        client
            .channels()
            .client_server_servers(CS)
            .unwrap()
            .iter()
            .map(|p| p.rid.clone())
            .collect::<Vec<_>>()
            == ["b"]
    })
    .await;
    stop([client, b]).await;
}

#[tokio::test]
async fn a_wildcard_bind_advertises_the_configured_host() {
    let wildcard = || {
        ClientServer::server(CS, echo_handlers("s", Default::default())).listen("tcp://0.0.0.0:0")
    };
    let err = node("w")
        .client_server(wildcard())
        .build()
        .err()
        .expect("invalid");
    assert!(err.to_string().contains("wildcard"), "{err}");
    // A wildcard bind is not loopback: plaintext there must be asked for.
    let server = start(
        node("s")
            .allow_plaintext()
            .client_server(wildcard().advertise_host("127.0.0.1")),
    )
    .await;
    let endpoint = server.channels().client_server_endpoint(CS).unwrap();
    assert!(
        endpoint.starts_with("tcp://127.0.0.1:") && !endpoint.ends_with(":0"),
        "{endpoint}"
    );
    let client = start(cs_client("c", &[&endpoint])).await;
    wait_for_servers(&client, 1).await;
    assert_eq!(answered(&client).await, "s");
    stop([client, server]).await;
}

#[tokio::test]
async fn a_process_with_only_client_server_and_fanout_roles_needs_no_mesh() {
    let server = start(cs_server("s", "tcp://127.0.0.1:0", 100)).await;
    let endpoint = server.channels().client_server_endpoint(CS).unwrap();
    // No mesh_name, no listen: this process joins no RouteMesh.
    let client = Runtime::builder()
        .rid("lone-client")
        .client_server(ClientServer::client(CS).connect(&endpoint))
        .build()
        .expect("valid without a mesh")
        .start()
        .await
        .expect("start");
    assert_eq!(client.endpoint(), "", "no mesh listener");
    wait_for_servers(&client, 1).await;
    assert_eq!(answered(&client).await, "s");
    // Anything mesh-related still needs the mesh settings.
    let err = Runtime::builder()
        .channel_client("mesh-channel")
        .client_server(ClientServer::client(CS).connect(&endpoint))
        .build()
        .err()
        .expect("invalid");
    let text = err.to_string();
    assert!(
        text.contains("mesh_name") && text.contains("listen"),
        "{text}"
    );
    stop([client, server]).await;
}

#[tokio::test]
async fn a_request_carries_its_remaining_budget_not_the_full_timeout() {
    let endpoint = unused_endpoint();
    let client = start(cs_client("c", &[&endpoint])).await;
    // The request waits for a server to appear before it can be submitted.
    let call = {
        let client = client.clone();
        tokio::spawn(async move {
            let opts = CallOptions::new().timeout(Duration::from_secs(4));
            client
                .channels()
                .request(
                    CS,
                    &Echo {
                        text: "budget".into(),
                    },
                )
                .options(opts)
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let handlers = zlink::Handlers::new().on_request(|ctx, e: Echo| async move {
        let left = ctx
            .deadline()
            .map(|d| d.saturating_duration_since(Instant::now()).as_millis())
            .unwrap_or(u128::MAX);
        Ok(Echoed {
            text: format!("{left}"),
            by: e.text,
            trace: None,
        })
    });
    let server =
        start(node("s").client_server(ClientServer::server(CS, handlers).listen(endpoint))).await;
    let reply = call.await.unwrap().expect("answered");
    let left: u128 = reply.text.parse().unwrap();
    assert!(
        left <= 2600,
        "the server saw {left} ms left of a 4 s call submitted after 1.5 s"
    );
    assert!(left > 0);
    stop([client, server]).await;
}

#[tokio::test]
async fn a_role_without_its_own_message_cap_still_serves() {
    let server = start(node("s").client_server(
        ClientServer::server(CS, echo_handlers("s", Default::default())).max_message_size(0),
    ))
    .await;
    let endpoint = server.channels().client_server_endpoint(CS).unwrap();
    let client = start(
        node("c").client_server(
            ClientServer::client(CS)
                .connect(endpoint)
                .max_message_size(0),
        ),
    )
    .await;
    wait_for_servers(&client, 1).await;
    assert_eq!(answered(&client).await, "s");
    stop([client, server]).await;
}

#[tokio::test]
async fn a_server_shutting_down_still_answers_the_request_it_accepted() {
    let server = start(cs_server("s", "tcp://127.0.0.1:0", 100)).await;
    let endpoint = server.channels().client_server_endpoint(CS).unwrap();
    let client = start(cs_client("c", &[&endpoint])).await;
    wait_for_servers(&client, 1).await;
    let call = {
        let client = client.clone();
        tokio::spawn(async move {
            echo_client_on(&client, CS)
                .slow(&Slow { millis: 300 })
                .await
        })
    };
    // Let the request reach the handler, then shut the server down within its grace.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let outcome = server
        .shutdown_with(zlink::ShutdownOptions::new().grace(Duration::from_secs(5)))
        .await;
    assert_eq!(
        outcome,
        zlink::ShutdownOutcome::Stopped,
        "the accepted work finished within the grace"
    );
    let reply = call
        .await
        .unwrap()
        .expect("the accepted request is answered");
    assert_eq!(reply.text, "slept 300");
    stop([client]).await;
}

#[tokio::test]
async fn shutdown_ends_within_one_grace_however_many_servers_are_busy() {
    // One node serving three ClientServer channels and a RouteMesh channel, each with a
    // handler that outlives the grace.
    let channels = ["cs-a", "cs-b", "cs-c"];
    let mut builder =
        node("busy").channel_server("mesh-slow", echo_handlers("busy", Default::default()));
    for channel in channels {
        builder = builder.client_server(
            ClientServer::server(channel, echo_handlers(channel, Default::default()))
                .listen("tcp://127.0.0.1:0"),
        );
    }
    let server = start(builder).await;
    let mut client = node("c");
    for channel in channels {
        let endpoint = server.channels().client_server_endpoint(channel).unwrap();
        client = client.client_server(ClientServer::client(channel).connect(endpoint));
    }
    let client = start(client.peer(zlink::PeerSpec::new(server.endpoint()))).await;
    for channel in channels {
        wait_until(WAIT, "the server is ready", || async {
            client
                .channels()
                .client_server_servers(channel)
                .unwrap()
                .len()
                == 1
        })
        .await;
    }
    client.channels().ready("mesh-slow", 1).await.unwrap();
    let mut calls = Vec::new();
    for channel in channels.into_iter().chain(["mesh-slow"]) {
        let client = client.clone();
        calls.push(tokio::spawn(async move {
            echo_client_on(&client, channel)
                .slow(&Slow { millis: 20_000 })
                .await
        }));
    }
    // Every handler is running before the shutdown starts.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let grace = Duration::from_millis(1500);
    let started = Instant::now();
    let outcome = server
        .shutdown_with(zlink::ShutdownOptions::new().grace(grace))
        .await;
    let took = started.elapsed();
    assert_eq!(
        outcome,
        zlink::ShutdownOutcome::ForceStopped(zlink::ShutdownReason::DeadlineExceeded),
        "handlers outlived the grace: the shutdown says so"
    );
    assert!(
        took < grace + Duration::from_millis(1000),
        "shutdown took {took:?} with a grace of {grace:?} (one grace per busy server before)"
    );
    for call in calls {
        assert!(
            call.await.unwrap().is_err(),
            "no handler outlived the shutdown"
        );
    }
    stop([client]).await;
}
