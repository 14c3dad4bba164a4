//! Limits and placement: queue bounds, placement by type and weight, per-node limits, and the
//! activation cap.

use super::*;

/// A Spot whose handlers wait at a gate the test opens, and note what they ran.
struct Gate {
    open: Arc<tokio::sync::Semaphore>,
    entered: Arc<AtomicUsize>,
    ran: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Spot for Gate {}

#[zlink::async_trait]
impl SpotHandlers for Gate {
    fn packets() -> Vec<(String, PacketKind)> {
        vec![
            ("Say".into(), PacketKind::Request),
            ("Shout".into(), PacketKind::Send),
        ]
    }

    async fn handle(
        &mut self,
        _ctx: &SpotContext,
        handler: usize,
        payload: Payload,
    ) -> zlink::Result<Payload> {
        let text = match handler {
            0 => payload.into_message::<Say>()?.0,
            _ => payload.into_message::<Shout>()?.0,
        };
        self.ran.lock().unwrap().push(text);
        self.entered.fetch_add(1, Ordering::SeqCst);
        let _pass = self.open.acquire().await;
        Payload::of(Said {
            lines: 0,
            by: String::new(),
            trace: None,
        })
    }
}

#[tokio::test]
async fn queue_bounds_give_the_saturation_result_of_each_path() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let open = Arc::new(tokio::sync::Semaphore::new(0));
    let entered = Arc::new(AtomicUsize::new(0));
    let ran = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (gate_open, gate_entered, gate_ran) = (open.clone(), entered.clone(), ran.clone());
    let gate = SpotType::new("gate", Relocation::Disable, move |_ctx| Gate {
        open: gate_open.clone(),
        entered: gate_entered.clone(),
        ran: gate_ran.clone(),
    })
    .unwrap()
    .queue_limits(2, 1 << 20)
    .unwrap();
    let a = start(
        discovered_node("a", &store, quick_lease())
            .spot_type(gate)
            .send_timeout(std::time::Duration::from_millis(200)),
    )
    .await;
    let b = plain_node("b", &store).await;
    wait_until(WAIT, "a and b connected", || async {
        peer_rids(&b) == ["a"]
    })
    .await;
    a.spots().get_or_create("g", "gate", "").await.unwrap();

    // One message runs (held at the gate), one waits: the queue of 2 is full.
    let running = tokio::spawn({
        let a = a.clone();
        async move { a.spots().request("g", &Say("1".into())).await }
    });
    wait_until(WAIT, "the first message runs", || async {
        entered.load(Ordering::SeqCst) == 1
    })
    .await;
    // A local send completes once queued: now the queue of 2 is full.
    a.spots().send("g", &Shout("2".into())).await.unwrap();

    // Request to a full local queue: CapacityExceeded at once.
    let local = a.spots().request("g", &Say("3".into())).await.unwrap_err();
    assert!(local.is(ErrorKind::CapacityExceeded), "{local}");
    // Request to a full remote queue: Unavailable at once.
    let remote = b.spots().request("g", &Say("4".into())).await.unwrap_err();
    assert!(remote.is(ErrorKind::Unavailable), "{remote}");
    // A local send waits up to the send timeout, then DeadlineExceeded.
    let started = tokio::time::Instant::now();
    let send = a.spots().send("g", &Shout("5".into())).await.unwrap_err();
    assert!(send.is(ErrorKind::DeadlineExceeded), "{send}");
    assert!(started.elapsed() >= std::time::Duration::from_millis(200));
    // A remote send completed when it left: the owner drops it, the sender hears nothing.
    b.spots().send("g", &Shout("6".into())).await.unwrap();

    open.add_permits(100);
    running.await.unwrap().unwrap();
    a.spots().request("g", &Say("after".into())).await.unwrap();
    // Nothing that was refused ran. (The remote send may have arrived before or after the
    // gate opened: the owner dropped it or ran it; either way its sender was done.)
    let ran = ran.lock().unwrap().clone();
    assert_eq!(&ran[..2], ["1", "2"], "{ran:?}");
    assert!(ran.contains(&"after".to_string()), "{ran:?}");
    for refused in ["3", "4", "5", "probe"] {
        assert!(
            !ran.contains(&refused.to_string()),
            "{refused} ran: {ran:?}"
        );
    }
    stop([b, a]).await;
}

#[tokio::test]
async fn a_node_without_the_type_places_the_spot_on_one_that_serves_it() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let a = object_server("a", &store, &counters).await;
    let b = plain_node("b", &store).await;
    sees_servers(&b, &["a"]).await;
    let SpotCreation::Created(room, reply) =
        b.spots().get_or_create("placed", "room", "").await.unwrap()
    else {
        panic!("not created")
    };
    assert_eq!((room.rid.as_str(), &reply[..]), ("a", &b"welcome"[..]));
    assert_eq!(a.status().spots_owned, 1);
    let said = b
        .spots()
        .request("placed", &Say("hi".into()))
        .await
        .unwrap();
    assert_eq!(said.by, "a");
    let declined = b.spots().get_or_create("nope", "room", "no").await.unwrap();
    assert_eq!(
        declined,
        SpotCreation::Rejected(Bytes::from_static(b"declined"))
    );
    // Close from a node that does not own it goes to the owner.
    assert!(b.spots().close(&room).await.unwrap());
    assert_eq!(a.status().spots_owned, 0);
    assert_eq!(b.spots().find("placed").await.unwrap(), None);
    let none = b
        .spots()
        .get_or_create("x", "no-such-type", "")
        .await
        .unwrap_err();
    assert!(none.is(ErrorKind::NotFound), "{none}");
    stop([b, a]).await;
}

#[tokio::test]
async fn placement_weight_zero_takes_no_new_spots() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let drained = weighted_server("drained", &store, &counters, 0).await;
    let open = weighted_server("open", &store, &counters, 100).await;
    let caller = plain_node("caller", &store).await;
    sees_servers(&caller, &["drained", "open"]).await;
    for i in 0..20 {
        let created = caller
            .spots()
            .get_or_create(&format!("r{i}"), "room", "")
            .await
            .unwrap();
        assert!(
            matches!(created, SpotCreation::Created(ref r, _) if r.rid == "open"),
            "{created:?}"
        );
    }
    assert_eq!(drained.status().spots_owned, 0);
    assert_eq!(open.status().spots_owned, 20);
    let invalid = node("x")
        .placement_weight(10_001)
        .build()
        .err()
        .expect("refused");
    assert!(
        invalid.to_string().contains("placement_weight"),
        "{invalid}"
    );
    stop([caller, open, drained]).await;
}

#[tokio::test]
async fn per_node_limits_place_elsewhere_then_refuse_with_capacity_exceeded() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let counters = Counters::default();
    let limited = |rid: &str| {
        discovered_node(rid, &store, quick_lease())
            .spot_type(room_type(rid, &counters))
            .max_spots(2)
    };
    let a = start(limited("a")).await;
    let b = start(limited("b")).await;
    let caller = plain_node("caller", &store).await;
    sees_servers(&caller, &["a", "b"]).await;
    for i in 0..4 {
        let created = caller
            .spots()
            .get_or_create(&format!("r{i}"), "room", "")
            .await
            .unwrap();
        assert!(matches!(created, SpotCreation::Created(..)), "{created:?}");
    }
    assert_eq!((a.status().spots_owned, b.status().spots_owned), (2, 2));
    let full = caller
        .spots()
        .get_or_create("r4", "room", "")
        .await
        .unwrap_err();
    assert!(full.is(ErrorKind::CapacityExceeded), "{full}");
    assert_eq!(
        caller.spots().find("r4").await.unwrap(),
        None,
        "nothing was reserved"
    );
    // A type's own limit holds on one node too.
    let one = start(
        discovered_node("one", &store, quick_lease())
            .spot_type(room_type("one", &counters).max_spots(1)),
    )
    .await;
    stop([caller, b, a]).await;
    wait_until(WAIT, "only `one` serves rooms", || async {
        peer_rids(&one).is_empty()
    })
    .await;
    one.spots().get_or_create("x1", "room", "").await.unwrap();
    let type_full = one
        .spots()
        .get_or_create("x2", "room", "")
        .await
        .unwrap_err();
    assert!(type_full.is(ErrorKind::CapacityExceeded), "{type_full}");
    stop([one]).await;
}

/// A Spot whose `on_create` waits at a gate the test opens (one pass per creation).
struct Slowpoke {
    open: Arc<tokio::sync::Semaphore>,
    deciding: Arc<AtomicUsize>,
}

#[zlink::async_trait]
impl SpotHandlers for Slowpoke {
    fn packets() -> Vec<(String, PacketKind)> {
        Vec::new()
    }

    async fn handle(&mut self, _: &SpotContext, _: usize, _: Payload) -> zlink::Result<Payload> {
        Ok(Payload::default())
    }
}

#[zlink::async_trait]
impl Spot for Slowpoke {
    async fn on_create(&mut self, _ctx: &SpotContext, _request: Bytes) -> CreateDecision {
        self.deciding.fetch_add(1, Ordering::SeqCst);
        self.open.acquire().await.expect("open").forget();
        CreateDecision::Accept(Bytes::new())
    }
}

/// How many creations one node runs at once (`MAX_ACTIVATIONS` in the object server).
const ACTIVATION_CAP: usize = 128;

/// Polls `value` for `window`: it never goes above `most`.
async fn stays_at_most(window: std::time::Duration, most: usize, value: impl Fn() -> usize) {
    let until = tokio::time::Instant::now() + window;
    while tokio::time::Instant::now() < until {
        assert!(value() <= most, "{} > {most}", value());
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(value() <= most, "{} > {most}", value());
}

#[tokio::test]
async fn the_activation_cap_bounds_concurrent_creations() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let open = Arc::new(tokio::sync::Semaphore::new(0));
    let factories = Arc::new(AtomicUsize::new(0));
    let deciding = Arc::new(AtomicUsize::new(0));
    let slow = {
        let (open, factories, deciding) = (open.clone(), factories.clone(), deciding.clone());
        SpotType::new("slowpoke", Relocation::Disable, move |_| {
            factories.fetch_add(1, Ordering::SeqCst);
            Slowpoke {
                open: open.clone(),
                deciding: deciding.clone(),
            }
        })
        .unwrap()
    };
    let a = start(discovered_node("a", &store, quick_lease()).spot_type(slow)).await;
    let done = Arc::new(AtomicUsize::new(0));
    let creations: Vec<_> = (0..ACTIVATION_CAP + 2)
        .map(|i| {
            let (a, done) = (a.clone(), done.clone());
            tokio::spawn(async move {
                let created = a
                    .spots()
                    .get_or_create(&format!("cap-{i}"), "slowpoke", "")
                    .await;
                done.fetch_add(1, Ordering::SeqCst);
                created
            })
        })
        .collect();
    wait_until(WAIT, "128 creations are deciding", || async {
        deciding.load(Ordering::SeqCst) == ACTIVATION_CAP
    })
    .await;
    // The other two wait for a slot: no factory of theirs runs while 128 are under way.
    stays_at_most(
        std::time::Duration::from_millis(300),
        ACTIVATION_CAP,
        || factories.load(Ordering::SeqCst),
    )
    .await;
    assert_eq!(done.load(Ordering::SeqCst), 0);
    // One creation finishes: exactly one waiting creation takes its slot.
    open.add_permits(1);
    wait_until(WAIT, "one finished and the 129th is deciding", || async {
        done.load(Ordering::SeqCst) == 1 && deciding.load(Ordering::SeqCst) == ACTIVATION_CAP + 1
    })
    .await;
    stays_at_most(
        std::time::Duration::from_millis(200),
        ACTIVATION_CAP + 1,
        || factories.load(Ordering::SeqCst),
    )
    .await;
    open.add_permits(ACTIVATION_CAP + 1);
    for creation in creations {
        let created = creation.await.unwrap().unwrap();
        assert!(matches!(created, SpotCreation::Created(..)), "{created:?}");
    }
    assert_eq!(factories.load(Ordering::SeqCst), ACTIVATION_CAP + 2);
    assert_eq!(a.status().spots_owned, ACTIVATION_CAP + 2);
    stop([a]).await;
}
