//! What an owner admits and how a turn runs: one message at a time, the admission fence, reply
//! routes and metadata, panics, calls out of a handler, stale replies, infrastructure never
//! behind a handler, and a local owner answering like a remote one.

use super::*;
use zlink_tests::contract::ById;

#[tokio::test]
async fn two_messages_for_one_spot_never_run_at_the_same_time() {
    let RoomServerAndCaller {
        _redis,
        counters,
        a,
        b,
    } = room_server_and_caller().await;
    a.spots()
        .get_or_create("busy", "room", Bytes::new())
        .await
        .unwrap();
    let calls = (0..50).map(|i| {
        let (a, b) = (&a, &b);
        async move {
            let from = if i % 2 == 0 { a } else { b };
            from.spots().request("busy", &Say(format!("{i}"))).await
        }
    });
    let results = futures::future::join_all(calls).await;
    let mut counts: Vec<usize> = results.into_iter().map(|r| r.unwrap().lines).collect();
    counts.sort_unstable();
    assert_eq!(
        counts,
        (1..=50).collect::<Vec<_>>(),
        "each turn saw the one before it"
    );
    assert_eq!(counters.overlaps.load(Ordering::SeqCst), 0);
    stop([b, a]).await;
}

#[tokio::test]
async fn the_target_admission_fence_excludes_the_generation() {
    let RoomServerAndCaller {
        _redis,
        counters: _,
        a,
        b,
    } = room_server_and_caller().await;
    let SpotCreation::Created(first, _) = a.spots().get_or_create("r", "room", "").await.unwrap()
    else {
        panic!("not created")
    };
    b.spots()
        .request("r", &Say("to the first".into()))
        .await
        .unwrap();
    // Closed and created again on the same owner: a new incarnation.
    assert!(a.spots().close(&first).await.unwrap());
    let SpotCreation::Created(second, _) = a.spots().get_or_create("r", "room", "").await.unwrap()
    else {
        panic!("not re-created")
    };
    assert!(second.generation > first.generation);
    // b's cached route still names the first incarnation; the owner admits it into the
    // current one (the generation is not part of a message's target).
    let reads = record_reads(&b);
    let said = b
        .spots()
        .request("r", &Say("to whoever is current".into()))
        .await
        .unwrap();
    assert_eq!(said.lines, 1, "the new incarnation took it");
    assert_eq!(record_reads(&b), reads, "sent on the cached route");
    stop([b, a]).await;
}

#[tokio::test]
async fn replies_use_the_reply_route_and_metadata_is_never_copied_to_them() {
    let RoomServerAndCaller {
        _redis,
        counters: _,
        a,
        b,
    } = room_server_and_caller().await;
    a.spots().get_or_create("r", "room", "").await.unwrap();
    let owner_reads = record_reads(&a);
    let options = zlink::CallOptions::new().metadata("trace", "t-1").unwrap();
    let said = b
        .spots()
        .request("r", &Say("traced".into()))
        .options(options)
        .await
        .unwrap();
    assert_eq!(
        said.trace.as_deref(),
        Some("t-1"),
        "the handler saw the metadata"
    );
    for i in 0..5 {
        b.spots().request("r", &Say(format!("{i}"))).await.unwrap();
    }
    assert_eq!(record_reads(&a), owner_reads, "answering looked nothing up");
    // A reply carries no metadata at all: the wire's reply head has no metadata frame,
    // and the typed reply is only the handler's value.
    let untraced = b.spots().request("r", &Say("plain".into())).await.unwrap();
    assert_eq!(untraced.trace, None);
    stop([b, a]).await;
}

#[tokio::test]
async fn a_panicking_hook_or_handler_does_not_stop_the_spot() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let a = object_server("a", &store, &counters).await;
    a.spots()
        .get_or_create("p", "room", "panic-init")
        .await
        .unwrap();
    // on_initialize panicked: the Spot still takes messages.
    assert_eq!(
        a.spots()
            .request("p", &Say("one".into()))
            .await
            .unwrap()
            .lines,
        1
    );
    let failed = a
        .spots()
        .request("p", &Say("panic".into()))
        .await
        .unwrap_err();
    assert!(failed.is(ErrorKind::InternalFailure), "{failed}");
    // ...and goes on after a handler panicked.
    assert_eq!(
        a.spots()
            .request("p", &Say("two".into()))
            .await
            .unwrap()
            .lines,
        2
    );
    stop([a]).await;
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Echoed)]
pub struct Ask(pub String);

/// A Spot that answers by calling the echo channel: the call keeps its turn.
pub struct Relay {
    asked: usize,
}

#[zlink::spot(type = "relay", relocation = recreate)]
impl Relay {
    #[handler]
    async fn ask(&mut self, ask: Ask, ctx: &SpotContext) -> zlink::Result<Echoed> {
        self.asked += 1;
        let echo = EchoServiceClient::new(ctx.handle(), CHANNEL);
        let mut reply = echo.echo(&Echo { text: ask.0 }).await?;
        reply.text = format!("{} (#{})", reply.text, self.asked);
        Ok(reply)
    }
}

impl Spot for Relay {}

#[tokio::test]
async fn a_spot_handler_calls_a_channel_through_its_nodes_send_path() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let echo = start(
        discovered_node("echo-server", &store, quick_lease())
            .channel_server(CHANNEL, echo_handlers("echo-server", Default::default())),
    )
    .await;
    let a = start(
        discovered_node("a", &store, quick_lease())
            .spot_type(Relay::spot_type(|_| Relay { asked: 0 }).unwrap()),
    )
    .await;
    let b = plain_node("b", &store).await;
    wait_until(WAIT, "everyone connected", || async {
        peer_rids(&a).len() == 2 && peer_rids(&b).len() == 2
    })
    .await;
    a.spots()
        .get_or_create("relay", Relay::STABLE_TYPE, "")
        .await
        .unwrap();
    let relay = RelayClient::new(&b, "relay");
    let first = relay.ask(Ask("hi".into())).await.unwrap();
    assert_eq!(
        (first.text.as_str(), first.by.as_str()),
        ("hi (#1)", "echo-server")
    );
    let second = relay.ask(Ask("again".into())).await.unwrap();
    assert_eq!(
        second.text, "again (#2)",
        "the Spot's state carried over the awaited call"
    );
    stop([b, a, echo]).await;
}

/// A request the held channel answers only when the test lets it.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Echoed)]
pub struct Hold(pub String);

/// A request for what a Spot has seen.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Seen)]
pub struct Peek;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Seen {
    pub generation: u64,
    pub replies: Vec<String>,
}

const HELD: &str = "held";

/// A channel whose answers wait at a gate: `entered` handlers are waiting or done,
/// `answered` have returned their reply.
#[derive(Clone)]
pub struct HeldService {
    open: Arc<tokio::sync::Semaphore>,
    entered: Arc<AtomicUsize>,
    answered: Arc<AtomicUsize>,
}

#[zlink::channel(server)]
impl HeldService {
    #[handler]
    async fn hold(&self, hold: Hold, _ctx: &zlink::HandlerContext) -> zlink::Result<Echoed> {
        self.entered.fetch_add(1, Ordering::SeqCst);
        self.open.acquire().await.expect("open").forget();
        self.answered.fetch_add(1, Ordering::SeqCst);
        Ok(Echoed {
            text: hold.0,
            by: HELD.into(),
            trace: None,
        })
    }
}

/// A Spot whose handler asks the held channel and keeps the replies it got.
struct Asker {
    replies: Vec<String>,
    log: Arc<std::sync::Mutex<Vec<String>>>,
}

#[zlink::spot(type = "asker", relocation = disable)]
impl Asker {
    #[handler]
    async fn ask(&mut self, ask: Ask, ctx: &SpotContext) -> zlink::Result<Echoed> {
        let generation = ctx.generation();
        self.log
            .lock()
            .unwrap()
            .push(format!("gen {generation} asks {}", ask.0));
        let patient = zlink::CallOptions::new().timeout(std::time::Duration::from_secs(10));
        let reply = HeldServiceClient::new(ctx.handle(), HELD)
            .hold(&Hold(ask.0))
            .options(patient)
            .await?;
        self.log
            .lock()
            .unwrap()
            .push(format!("gen {generation} resumed with {}", reply.text));
        self.replies.push(reply.text.clone());
        Ok(reply)
    }

    #[handler]
    async fn peek(&mut self, _peek: Peek, ctx: &SpotContext) -> zlink::Result<Seen> {
        Ok(Seen {
            generation: ctx.generation(),
            replies: self.replies.clone(),
        })
    }
}

impl Spot for Asker {}

#[tokio::test]
async fn a_reply_to_an_older_incarnation_is_never_delivered_to_a_re_created_spot() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let held = HeldService {
        open: Arc::new(tokio::sync::Semaphore::new(0)),
        entered: Arc::new(AtomicUsize::new(0)),
        answered: Arc::new(AtomicUsize::new(0)),
    };
    let server = start(
        discovered_node("held-server", &store, quick_lease()).channel_server(HELD, held.clone()),
    )
    .await;
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let asker_log = log.clone();
    // A short request timeout: a close waits that long for a running turn, then stops it.
    let a = start(
        discovered_node("a", &store, quick_lease())
            .request_timeout(std::time::Duration::from_millis(700))
            .spot_type(
                Asker::spot_type(move |_| Asker {
                    replies: Vec::new(),
                    log: asker_log.clone(),
                })
                .unwrap(),
            ),
    )
    .await;
    wait_until(WAIT, "a and the held server connected", || async {
        peer_rids(&a) == ["held-server"]
    })
    .await;
    let patient = || zlink::CallOptions::new().timeout(std::time::Duration::from_secs(10));

    let SpotCreation::Created(first, _) = a
        .spots()
        .get_or_create("q", Asker::STABLE_TYPE, "")
        .await
        .unwrap()
    else {
        panic!("not created")
    };
    // The first incarnation asks the channel and waits for its reply inside its turn.
    let old = tokio::spawn({
        let a = a.clone();
        async move {
            a.spots()
                .request("q", &Ask("for gen 1".into()))
                .options(patient())
                .await
        }
    });
    wait_until(WAIT, "the first incarnation's request is held", || async {
        held.entered.load(Ordering::SeqCst) == 1
    })
    .await;
    // Closed (the close gives up on the awaiting turn) and created again on the same node.
    assert!(a.spots().close(&first).await.unwrap());
    let ended = old.await.unwrap().unwrap_err();
    assert_eq!(ended.kind(), Some(ErrorKind::ShuttingDown), "{ended}");
    let SpotCreation::Created(second, _) = a
        .spots()
        .get_or_create("q", Asker::STABLE_TYPE, "")
        .await
        .unwrap()
    else {
        panic!("not re-created")
    };
    assert!(second.generation > first.generation);
    // The new incarnation asks too, while the old reply is still outstanding.
    let new = tokio::spawn({
        let a = a.clone();
        async move {
            a.spots()
                .request("q", &Ask("for gen 2".into()))
                .options(patient())
                .await
        }
    });
    wait_until(WAIT, "the second incarnation's request is held", || async {
        held.entered.load(Ordering::SeqCst) == 2
    })
    .await;
    // The old reply goes out first (the gate is FIFO), then the new one.
    held.open.add_permits(1);
    wait_until(WAIT, "the old reply was sent", || async {
        held.answered.load(Ordering::SeqCst) == 1
    })
    .await;
    held.open.add_permits(1);
    let got = new.await.unwrap().unwrap();
    assert_eq!(got.text, "for gen 2", "the new turn got its own reply");
    let seen = a.spots().request("q", &Peek).await.unwrap();
    assert_eq!(seen.generation, second.generation);
    assert_eq!(
        seen.replies,
        ["for gen 2"],
        "nothing of the old incarnation arrived"
    );
    let log = log.lock().unwrap().clone();
    assert_eq!(
        log,
        [
            format!("gen {} asks for gen 1", first.generation),
            format!("gen {} asks for gen 2", second.generation),
            format!("gen {} resumed with for gen 2", second.generation),
        ],
        "the old turn never resumed"
    );
    assert_eq!(held.answered.load(Ordering::SeqCst), 2);
    stop([a, server]).await;
}

/// Finishes `work` within `within`, or panics naming `what`.
async fn finishes_within<T>(
    within: std::time::Duration,
    what: &str,
    work: impl std::future::IntoFuture<Output = T>,
) -> T {
    tokio::time::timeout(within, work.into_future())
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {within:?}"))
}

/// A Spot whose `Say("hold")` waits for the test's signal (`open`); anything else it
/// answers at once with how many lines it took.
struct Latch {
    lines: usize,
    open: Arc<tokio::sync::Semaphore>,
    held: Arc<AtomicUsize>,
}

#[zlink::spot(type = "latch", relocation = disable)]
impl Latch {
    #[handler]
    async fn say(&mut self, say: Say, ctx: &SpotContext) -> zlink::Result<Said> {
        if say.0 == "hold" {
            self.held.fetch_add(1, Ordering::SeqCst);
            self.open.acquire().await.expect("open").forget();
        }
        self.lines += 1;
        Ok(Said {
            lines: self.lines,
            by: ctx.handle().rid().to_string(),
            trace: None,
        })
    }
}

impl Spot for Latch {}

#[tokio::test]
async fn infrastructure_work_never_waits_behind_an_application_handler() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let open = Arc::new(tokio::sync::Semaphore::new(0));
    let held = Arc::new(AtomicUsize::new(0));
    let latch = {
        let (open, held) = (open.clone(), held.clone());
        Latch::spot_type(move |_| Latch {
            lines: 0,
            open: open.clone(),
            held: held.clone(),
        })
        .unwrap()
    };
    // A close waits for a running turn up to the request timeout (1 s), then stops it.
    let request_timeout = std::time::Duration::from_secs(1);
    let a = start(
        discovered_node("a", &store, quick_lease())
            .request_timeout(request_timeout)
            .channel_server(CHANNEL, echo_handlers("a", Default::default()))
            .spot_type(latch),
    )
    .await;
    let b = plain_node("b", &store).await;
    sees_servers(&b, &["a"]).await;
    wait_until(WAIT, "b reaches a's channel", || async {
        echo_client(&b)
            .echo(&Echo { text: "?".into() })
            .await
            .is_ok()
    })
    .await;
    let mut refs = Vec::new();
    for id in ["stuck", "other", "third"] {
        let SpotCreation::Created(spot, _) = a
            .spots()
            .get_or_create(id, Latch::STABLE_TYPE, "")
            .await
            .unwrap()
        else {
            panic!("{id} not created")
        };
        refs.push(spot);
    }
    let [stuck_ref, _, third_ref] = [&refs[0], &refs[1], &refs[2]];

    // One turn is stuck in its handler until the test's signal, for up to 10 s.
    let stuck_since = tokio::time::Instant::now();
    let stuck = tokio::spawn({
        let b = b.clone();
        let patient = zlink::CallOptions::new().timeout(std::time::Duration::from_secs(10));
        async move {
            b.spots()
                .request("stuck", &Say("hold".into()))
                .options(patient)
                .await
        }
    });
    wait_until(WAIT, "the stuck handler runs", || async {
        held.load(Ordering::SeqCst) == 1
    })
    .await;

    // Meanwhile the same node answers everything else at once.
    let quick = std::time::Duration::from_secs(2);
    let said = finishes_within(
        quick,
        "a remote request to another Spot",
        b.spots().request("other", &Say("hi".into())),
    )
    .await
    .unwrap();
    assert_eq!((said.lines, said.by.as_str()), (1, "a"));
    let said = finishes_within(
        quick,
        "a local request to another Spot",
        a.spots().request("other", &Say("hi".into())),
    )
    .await
    .unwrap();
    assert_eq!(said.lines, 2);
    let closed = finishes_within(quick, "a close of a third Spot", b.spots().close(third_ref))
        .await
        .unwrap();
    assert!(closed);
    let echoed = finishes_within(
        quick,
        "a channel call",
        echo_client(&b).echo(&Echo {
            text: "still here".into(),
        }),
    )
    .await
    .unwrap();
    assert_eq!(
        (echoed.text.as_str(), echoed.by.as_str()),
        ("still here", "a")
    );
    let found = finishes_within(quick, "find", a.spots().find("stuck"))
        .await
        .unwrap();
    assert_eq!(found.as_ref(), Some(stuck_ref));
    assert_eq!(
        finishes_within(quick, "find of the closed Spot", b.spots().find("third"))
            .await
            .unwrap(),
        None
    );
    assert_eq!(held.load(Ordering::SeqCst), 1, "the stuck turn still runs");

    // The stuck Spot's own close (its lifecycle lane) waits for the running turn for the
    // request timeout, then stops it and releases the Spot.
    let started = tokio::time::Instant::now();
    let closed = finishes_within(
        request_timeout + std::time::Duration::from_secs(1),
        "the stuck Spot's close",
        a.spots().close(stuck_ref),
    )
    .await
    .unwrap();
    assert!(closed);
    let took = started.elapsed();
    assert!(
        took >= request_timeout,
        "the close gave the turn the request timeout: {took:?}"
    );
    let ended = finishes_within(quick, "the stuck request", stuck)
        .await
        .unwrap()
        .unwrap_err();
    assert!(ended.is(ErrorKind::ShuttingDown), "{ended}");
    assert!(
        stuck_since.elapsed() < std::time::Duration::from_secs(10),
        "everything above ran while the turn was stuck"
    );
    assert_eq!(a.spots().find("stuck").await.unwrap(), None);
    open.add_permits(10);
    stop([b, a]).await;
}

/// An owner `a` of the Probe "p" and a caller `b` on another node.
async fn probe_owner_and_caller(
    store: &Arc<dyn zlink::store::LocationStore>,
) -> (Runtime, Runtime) {
    let a = start(
        discovered_node("a", store, quick_lease()).spot_type(Probe::spot_type(|_| Probe).unwrap()),
    )
    .await;
    let b = plain_node("b", store).await;
    sees_servers(&b, &["a"]).await;
    a.spots()
        .get_or_create("p", Probe::STABLE_TYPE, "")
        .await
        .unwrap();
    (a, b)
}

#[tokio::test]
async fn a_local_owner_keeps_the_metadata_and_completion_contract_of_a_remote_one() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let (a, b) = probe_owner_and_caller(&store).await;
    zlink_tests::contract::a_local_owner_answers_like_a_remote_one(ById::Spot("p"), &a, &b).await;
    stop([b, a]).await;
}

#[tokio::test]
async fn a_handler_argument_error_reaches_a_local_caller_as_it_reaches_a_remote_one() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let (a, b) = probe_owner_and_caller(&store).await;
    zlink_tests::contract::an_argument_error_reaches_a_local_caller_as_a_remote_one(
        ById::Spot("p"),
        &a,
        &b,
    )
    .await;
    stop([b, a]).await;
}

#[tokio::test]
async fn a_refusal_a_spot_handler_returns_is_not_its_callers_and_the_handler_runs_once() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let (a, b) = probe_owner_and_caller(&store).await;
    zlink_tests::contract::a_refusal_a_handler_returns_is_not_its_callers(ById::Spot("p"), &a, &b)
        .await;
    stop([b, a]).await;
}

#[tokio::test]
async fn a_reserved_metadata_key_reaches_a_local_handler_as_it_reaches_a_remote_one() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let (a, b) = probe_owner_and_caller(&store).await;
    let reserved = || {
        zlink::CallOptions::new()
            .metadata("zlink.relay", "r-1")
            .unwrap()
    };
    let local = a
        .spots()
        .request("p", &Inspect::default())
        .options(reserved())
        .await
        .unwrap();
    let remote = b
        .spots()
        .request("p", &Inspect::default())
        .options(reserved())
        .await
        .unwrap();
    assert_eq!(local, remote);
    stop([b, a]).await;
}
