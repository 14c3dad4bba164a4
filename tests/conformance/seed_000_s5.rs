//! Seed 000 §5: global ID lookup, movement and Message Follow, session bind and relay,
//! reply.

use std::sync::Arc;
use std::time::Duration;
use zlink::TestFaults;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;
use zlink::object::{CreateDecision, Spot, SpotContext};
use zlink::{ErrorKind, Runtime};
use zlink_testkit::{wait_until, FaultyLocationStore, RedisServer};
use zlink_tests::*;

const WAIT: Duration = Duration::from_secs(10);

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Pong)]
pub struct Ping;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Pong;

/// A Spot whose creation waits at `gate` before it accepts.
pub struct Gated {
    gate: Arc<Semaphore>,
}

#[zlink::spot(type = "gated", relocation = disable)]
impl Gated {
    #[handler]
    async fn ping(&mut self, _ping: Ping, _ctx: &SpotContext) -> zlink::Result<Pong> {
        Ok(Pong)
    }
}

#[zlink::async_trait]
impl Spot for Gated {
    async fn on_create(&mut self, _ctx: &SpotContext, _request: Bytes) -> CreateDecision {
        let _pass = self.gate.acquire().await;
        CreateDecision::Accept(Bytes::new())
    }
}

fn record_reads(rt: &Runtime) -> u64 {
    rt.status()
        .store_operations
        .map_or(0, |s| s.reads.record.calls)
}

/// The record reads `calls` pings of Spot `id` from `caller` made, and their results.
async fn reads_of(caller: &Runtime, id: &str, calls: usize) -> (u64, Vec<zlink::Result<Pong>>) {
    let before = record_reads(caller);
    let mut results = Vec::new();
    for _ in 0..calls {
        results.push(GatedClient::new(caller, id).ping(&Ping).await);
    }
    (record_reads(caller) - before, results)
}

/// Node "caller" on a `FaultyLocationStore` over `store` (returned too), once it sees "server".
async fn faulty_caller(
    store: &Arc<dyn zlink::store::LocationStore>,
) -> (Runtime, Arc<FaultyLocationStore>) {
    let faulty = Arc::new(FaultyLocationStore::new(store.clone()));
    let caller_store: Arc<dyn zlink::store::LocationStore> = faulty.clone();
    let caller = start(discovered_node("caller", &caller_store, quick_lease())).await;
    wait_until(WAIT, "the caller sees the server", || async {
        peer_rids(&caller) == ["server"]
    })
    .await;
    (caller, faulty)
}

/// Seed 000 §5, global ID lookup, item 3.
#[tokio::test]
async fn missing_creating_and_store_failure_are_never_cached_as_negative_results() {
    // "Missing, Creating and Store failure are not kept in the cache as negative results."
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let gate = Arc::new(Semaphore::new(0));
    let server = {
        let gate = gate.clone();
        start(
            discovered_node("server", &store, quick_lease())
                .spot_type(Gated::spot_type(move |_| Gated { gate: gate.clone() }).unwrap()),
        )
        .await
    };
    let (caller, faulty) = faulty_caller(&store).await;
    // Missing: every call reads again.
    let (reads, results) = reads_of(&caller, "s1", 2).await;
    assert_eq!(reads, 2, "Missing is not cached");
    assert!(results
        .iter()
        .all(|r| r.as_ref().is_err_and(|e| e.is(ErrorKind::NotFound))));
    // Creating: every call reads again.
    let creating = tokio::spawn({
        let server = server.clone();
        async move {
            server
                .spots()
                .get_or_create("s1", "gated", Bytes::new())
                .await
        }
    });
    wait_until(WAIT, "s1 is being created", || async {
        matches!(
            GatedClient::new(&caller, "s1").ping(&Ping).await,
            Err(e) if e.is(ErrorKind::Unavailable)
        )
    })
    .await;
    let (reads, results) = reads_of(&caller, "s1", 2).await;
    assert_eq!(reads, 2, "Creating is not cached");
    assert!(
        results
            .iter()
            .all(|r| r.as_ref().is_err_and(|e| e.is(ErrorKind::Unavailable))),
        "{results:?}"
    );
    gate.add_permits(1);
    creating.await.unwrap().unwrap();
    // A store failure: the call fails, and the next one reads again and succeeds.
    faulty.set_down(true);
    let failed = GatedClient::new(&caller, "s1").ping(&Ping).await;
    faulty.set_down(false);
    assert!(failed.is_err(), "the store failed: {failed:?}");
    let (reads, results) = reads_of(&caller, "s1", 3).await;
    assert_eq!(
        reads, 1,
        "after a store failure one read, then the Ready route is cached"
    );
    assert!(results.iter().all(Result::is_ok));
    stop([caller, server]).await;
}

/// Seed 000 §5, global ID lookup, item 1.
#[tokio::test]
async fn direct_calls_name_only_the_global_id_from_any_node() {
    // "Spot·Actor direct start methods take only a global ID and do not require an owner
    // RID, generation or ActorRef·SpotRef as the message target."
    use zlink_tests::relocating::{mesh, Add, CounterClient};
    let m = mesh(&["a", "b"], None).await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    a.actors().create("p1", "counter").await.unwrap();
    // The client never saw a ref, an owner or a generation: the ID is the whole address.
    let counted = CounterClient::new(client, "p1").add(Add(2)).await.unwrap();
    assert_eq!(counted.total, 2);
    let by_hand = client.actors().request("p1", &Add(3)).await.unwrap();
    assert_eq!(by_hand.total, 5);
    stop(m.nodes).await;
}

/// Seed 000 §5, global ID lookup, item 2.
#[tokio::test]
async fn a_cache_hit_reads_nothing_and_after_a_miss_or_an_invalidation_the_ready_authority_is_read()
{
    // "On a cache hit, the Location Store is not read; after a cache miss or invalidation,
    // the current Ready authority is looked up."
    use zlink_tests::relocating::{mesh, Add, CounterClient};
    let m = mesh(&["a", "b"], None).await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    a.actors().create("p2", "counter").await.unwrap();
    let counter = CounterClient::new(client, "p2");
    let before = record_reads(client);
    counter.add(Add(1)).await.unwrap();
    assert_eq!(
        record_reads(client) - before,
        1,
        "a miss reads the authority once"
    );
    let before = record_reads(client);
    for _ in 0..5 {
        counter.add(Add(1)).await.unwrap();
    }
    assert_eq!(record_reads(client) - before, 0, "hits read nothing");
    // A move invalidates the entry (the follow notice): the next call reads the new
    // authority and reaches the new owner.
    let owner = if a.actors().find("p2").await.unwrap().unwrap().rid == "a" {
        &m.nodes[0]
    } else {
        &m.nodes[1]
    };
    let to = if owner.rid() == "a" { "b" } else { "a" };
    let before_move = record_reads(client);
    owner.actors().relocate("p2", Some(to)).await.unwrap();
    // The first calls may still ride the old route's Message Follow; once the follow
    // notice invalidated the entry, one read finds the new owner, and hits follow.
    wait_until(WAIT, "the client read the new authority", || async {
        counter.add(Add(0)).await.unwrap().by == to && record_reads(client) > before_move
    })
    .await;
    counter.add(Add(0)).await.unwrap();
    let before = record_reads(client);
    for _ in 0..3 {
        assert_eq!(counter.add(Add(1)).await.unwrap().by, to);
    }
    assert_eq!(
        record_reads(client) - before,
        0,
        "the new route is cached again"
    );
    stop(m.nodes).await;
}

/// Asks Spot `target` (of the gated type) for a pong from a Spot's own handler.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Pong)]
pub struct Ask {
    pub target: String,
}

/// A Spot that calls another Spot from its handler: a requester with a logical ID.
pub struct Asker;

#[zlink::spot(type = "asker", relocation = disable)]
impl Asker {
    #[handler]
    async fn ask(&mut self, ask: Ask, ctx: &SpotContext) -> zlink::Result<Pong> {
        GatedClient::new(ctx.handle(), ask.target.as_str())
            .ping(&Ping)
            .await
    }
}

impl Spot for Asker {}

/// Two servers of the gated type (creations pass at once) and a caller, on `store`.
async fn gated_mesh(store: &Arc<dyn zlink::store::LocationStore>) -> [Runtime; 3] {
    let server = |rid: &'static str| {
        let store = store.clone();
        async move {
            let gate = Arc::new(Semaphore::new(Semaphore::MAX_PERMITS));
            start(
                discovered_node(rid, &store, quick_lease())
                    .spot_type(Gated::spot_type(move |_| Gated { gate: gate.clone() }).unwrap())
                    .spot_type(Asker::spot_type(|_| Asker).unwrap()),
            )
            .await
        }
    };
    let (a, b) = (server("a").await, server("b").await);
    let caller = start(discovered_node("caller", store, quick_lease())).await;
    wait_until(WAIT, "the caller sees both servers", || async {
        caller.spots().ready_nodes("gated").unwrap_or_default() == ["a", "b"]
    })
    .await;
    [a, b, caller]
}

/// A ping of gated Spot `id` from `caller` fails with `kind`; then `caller` gets or creates `id`.
async fn ping_fails_then_get_or_create(
    caller: &Runtime,
    id: &str,
    kind: ErrorKind,
) -> zlink::object::SpotCreation {
    let failed = GatedClient::new(caller, id).ping(&Ping).await.unwrap_err();
    assert!(failed.is(kind), "{failed}");
    caller
        .spots()
        .get_or_create(id, "gated", Bytes::new())
        .await
        .unwrap()
}

/// Seed 000 §5, global ID lookup, item 5.
#[tokio::test]
async fn missing_leads_only_to_creation_and_unavailable_only_to_the_callers_error() {
    // "The resolver returns Missing and Unavailable as distinct tags; Missing is connected
    // only to the creation coordinator, and Unavailable only to the terminal completion
    // mapper."
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let [a, b, caller] = gated_mesh(&store).await;
    // Missing: a call is NotFound, and creation makes the Spot.
    let made = ping_fails_then_get_or_create(&caller, "fresh", ErrorKind::NotFound).await;
    assert!(
        matches!(made, zlink::object::SpotCreation::Created(..)),
        "{made:?}"
    );
    // Unavailable: the owner died. A call fails Unavailable, and creation does not act on
    // it: the Spot is found, not made again.
    let owner = caller.spots().find("fresh").await.unwrap().unwrap();
    let (dead, alive) = if owner.rid == "a" { (a, b) } else { (b, a) };
    dead.crash().await;
    let again = ping_fails_then_get_or_create(&caller, "fresh", ErrorKind::Unavailable).await;
    match again {
        zlink::object::SpotCreation::Existing(found) => assert_eq!(found, owner),
        other => panic!("a Spot was made again for an unavailable one: {other:?}"),
    }
    stop([caller, alive]).await;
}

/// The next `Add(1)` on `counter` fails `Unavailable`; the one after it runs, total 2, on `by`.
async fn unavailable_then_the_next_add_runs(
    counter: &zlink_tests::relocating::CounterClient,
    by: &str,
    why: &str,
) {
    use zlink_tests::relocating::Add;
    let failed = counter.add(Add(1)).await.unwrap_err();
    assert!(failed.is(ErrorKind::Unavailable), "{failed}");
    let next = counter.add(Add(1)).await.unwrap();
    assert_eq!((next.total, next.by.as_str()), (2, by), "{why}");
}

/// Seed 000 §5, movement and Message Follow, item 11.
#[tokio::test]
async fn a_failed_operation_is_not_resubmitted_to_the_new_owner_and_the_next_call_looks_it_up() {
    // "A failed operation is not automatically resubmitted to a fresh owner; only the next
    // call looks up the current authority again."
    use zlink_tests::relocating::{mesh, Add, CounterClient};
    // Message Follow off, so the old route fails rather than being relayed.
    let m = mesh(&["a", "b"], Some(Duration::ZERO)).await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    client.actors().create("c7", "counter").await.unwrap();
    let counter = CounterClient::new(client, "c7");
    counter.add(Add(1)).await.unwrap();
    a.actors().relocate("c7", Some("b")).await.unwrap();
    unavailable_then_the_next_add_runs(&counter, "b", "the failed call did not run").await;
    stop(m.nodes).await;
}

/// Seed 000 §5, reply, item 16.
#[tokio::test]
async fn a_reply_goes_back_on_the_requests_own_route_without_any_store_read() {
    // "A reply uses the request's reply route and correlation and does not look up the
    // requester's logical ID in the Location Store."
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let nodes = gated_mesh(&store).await;
    let caller = &nodes[2];
    let asker = caller
        .spots()
        .get_or_create("asker-1", "asker", Bytes::new())
        .await
        .unwrap();
    let asker_on = caller.spots().find("asker-1").await.unwrap().unwrap().rid;
    drop(asker);
    // A gated Spot on the other server: the request crosses the mesh, Spot to Spot.
    let mut target = None;
    for n in 0..50 {
        let id = format!("target-{n}");
        caller
            .spots()
            .get_or_create(&id, "gated", Bytes::new())
            .await
            .unwrap();
        if caller.spots().find(&id).await.unwrap().unwrap().rid != asker_on {
            target = Some(id);
            break;
        }
    }
    let target = target.expect("placement put one target on the other server");
    let target_node = nodes
        .iter()
        .find(|rt| rt.rid() != asker_on && rt.rid() != "caller")
        .unwrap();
    let asker = AskerClient::new(caller, "asker-1");
    let question = Ask {
        target: target.clone(),
    };
    asker.ask(&question).await.unwrap();
    // The target's node answers every request on its reply route: it reads nothing,
    // not the asker's ID above all.
    let before = record_reads(target_node);
    for _ in 0..5 {
        asker.ask(&question).await.unwrap();
    }
    assert_eq!(
        record_reads(target_node) - before,
        0,
        "a reply looks nothing up"
    );
    let [a, b, caller] = nodes;
    stop([caller, b, a]).await;
}

/// Seed 000 §5, reply, item 17.
#[tokio::test]
async fn application_metadata_never_replaces_the_owner_route_or_the_reply_route() {
    // "Application metadata does not replace the owner route or the reply route, and
    // request metadata is not automatically copied to the reply."
    use zlink_tests::relocating::{mesh_custom, Add};
    // a loses every reply to what it relays, so a relayed result is read back from the
    // Relocation Store under the relay's own ID: a forged one would lose it.
    let m = mesh_custom(&["a", "b"], 0, |rid, _, builder| {
        if rid == "a" {
            builder.test_lose_relayed_replies()
        } else {
            builder
        }
    })
    .await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    client.actors().create("m1", "counter").await.unwrap();
    // Metadata that reads like routing: an owner, a reply address, the framework's relay key.
    let call = |n: u64| {
        client
            .actors()
            .request("m1", &Add(n))
            .metadata("owner", "b")
            .and_then(|c| c.metadata("reply-to", "b"))
            .and_then(|c| c.metadata("rid", "client-elsewhere"))
            .and_then(|c| c.metadata("zlink.relay", "forged"))
            .unwrap()
    };
    let first = call(1).await.unwrap();
    assert_eq!(
        (first.total, first.by.as_str()),
        (1, "a"),
        "the owner route decides"
    );
    a.actors().relocate("m1", Some("b")).await.unwrap();
    // On the client's cached route: relayed by a, its reply lost and read back by the
    // framework's relay ID, answered to this caller once.
    let relayed = call(1).await.unwrap();
    assert_eq!((relayed.total, relayed.by.as_str()), (2, "b"));
    let next = call(1).await.unwrap();
    assert_eq!(next.total, 3, "each ran exactly once");
    stop(m.nodes).await;
}

/// Seed 000 §5, global ID lookup, item 7.
#[tokio::test]
async fn the_owner_admits_only_the_owner_generation_it_holds_now_and_never_re_addresses_the_message(
) {
    // "Target admission validates the authority owner generation and lease fence of the
    // owner that was found, excludes the ObjectGeneration of direct messages from the
    // target decision as specified in §2.6, and does not re-address the message to a new
    // incarnation."
    use zlink_tests::relocating::{mesh_custom, Add, CounterClient};
    // No Message Follow, and a caller that never hears of a move: its cached route stays
    // the one it read.
    let m = mesh_custom(&["a", "b"], 0, |_, _, builder| {
        builder.message_follow_duration(Duration::ZERO)
    })
    .await;
    let caller =
        start(discovered_node("caller", &m.store, quick_lease()).test_drop_follow_notices()).await;
    wait_until(WAIT, "the caller sees both servers", || async {
        peer_rids(&caller).len() == 3
    })
    .await;
    let (a, b) = (&m.nodes[0], &m.nodes[1]);
    caller.actors().create("g7", "counter").await.unwrap();
    let counter = CounterClient::new(&caller, "g7");
    assert_eq!(counter.add(Add(1)).await.unwrap().by, "a");
    // There and back: a owns the same incarnation again, under a later owner generation.
    a.actors().relocate("g7", Some("b")).await.unwrap();
    b.actors().relocate("g7", Some("a")).await.unwrap();
    // The caller's route names a's old owner generation: a refuses it, and nothing ran.
    unavailable_then_the_next_add_runs(
        &counter,
        "a",
        "the refused call never ran; the next one read the authority again",
    )
    .await;
    caller.shutdown().await;
    stop(m.nodes).await;
}

/// The route fence of Actor `id`'s authority record, read straight from the Location
/// Store, and the RID it names.
async fn stored_fence(
    store: &Arc<dyn zlink::store::LocationStore>,
    id: &str,
) -> (zlink::wire::RouteFence, String) {
    #[derive(Deserialize)]
    struct Stored {
        fence: StoredFence,
        route: StoredRoute,
    }
    #[derive(Deserialize)]
    struct StoredFence {
        object_generation: u64,
        owner_generation: u64,
        lease_generation: u64,
    }
    #[derive(Deserialize)]
    struct StoredRoute {
        rid: String,
    }
    let key = zlink::store::RecordKey::new(format!("zla1:a:{}:{id}", id.len()), "authority");
    let zlink::store::ReadOutcome::Found { value, .. } = store.read(&key).await.unwrap() else {
        panic!("no authority record for {id}");
    };
    let stored: Stored = zlink::cbor_decode(&value).expect("an authority record");
    let f = stored.fence;
    (
        zlink::wire::RouteFence {
            object_generation: f.object_generation,
            owner_generation: f.owner_generation,
            lease_generation: f.lease_generation,
        },
        stored.route.rid,
    )
}

/// An Actor command for `id` under `fence`, as a node that resolved that route sends it.
fn actor_command(
    command: zlink::wire::Command,
    (correlation, operation): (u64, u64),
    id: &str,
    fence: zlink::wire::RouteFence,
    message: (&str, Bytes),
) -> Vec<Bytes> {
    use zlink::wire::{CallHead, CallMessage, Envelope, Metadata, WireName};
    Envelope::Call(CallMessage {
        command,
        head: CallHead {
            correlation,
            operation,
            deadline_ms: if correlation == 0 { 0 } else { 10_000 },
            hops: 0,
            target: WireName::from_text(id),
            packet: WireName::from_text(message.0),
            fence: Some(fence),
            session: None,
            topic: None,
            push: None,
        },
        metadata: Metadata::new(),
        payload: message.1,
    })
    .encode()
}

/// Seed 000 §5, movement and Message Follow, item 8.
#[tokio::test]
async fn a_follow_relay_reads_no_store_and_keeps_the_operation_generation_payload_and_reply_route()
{
    // "The Message Follow relay uses only committed routes, does not read the Store, and
    // preserves the operation ID, generation, payload and reply route."
    use zlink::wire::{Command, Envelope, ReplyOutcome};
    use zlink_tests::relocating::{mesh, Add, Counted, Log};
    let m = mesh(&["a", "b"], None).await;
    let a = &m.nodes[0];
    let created = a.actors().create("w8", "counter").await.unwrap();
    let (old_fence, owner) = stored_fence(&m.store, "w8").await;
    assert_eq!(owner, "a");
    a.actors().relocate("w8", Some("b")).await.unwrap();
    let (new_fence, owner) = stored_fence(&m.store, "w8").await;
    assert_eq!(owner, "b", "the move committed");
    // A node "p" whose cache still holds the old route sends on it, to a: a request and a
    // one-way, each under its own operation.
    let mut p = zlink_tests::raw_peer::admitted(&a.endpoint(), "p", Vec::new()).await;
    let (request_op, send_op, correlation) = (0xA11CE, 0xB0B, 77);
    let reads_before = record_reads(a);
    let request = actor_command(
        Command::ActorRequest,
        (correlation, request_op),
        "w8",
        old_fence,
        ("Add", zlink::cbor_encode(&Add(5)).unwrap()),
    );
    let send = actor_command(
        Command::ActorSend,
        (0, send_op),
        "w8",
        old_fence,
        ("Log", zlink::cbor_encode(&Log(9)).unwrap()),
    );
    for frames in [&request, &send] {
        let slices: Vec<&[u8]> = frames.iter().map(|f| f.as_ref()).collect();
        p.send(&slices).await.expect("sent");
    }
    // The reply comes back on p's own connection, under its correlation and operation.
    let (mut reply, mut notices) = (None, Vec::new());
    tokio::time::timeout(WAIT, async {
        while reply.is_none() || notices.is_empty() {
            let frames = zlink_tests::raw_peer::next_frames(&mut p).await;
            match Envelope::decode(&frames) {
                Ok(Envelope::Reply {
                    correlation: c,
                    operation,
                    outcome: ReplyOutcome::Ok(payload),
                }) if c == correlation => reply = Some((operation, payload)),
                Ok(Envelope::Call(call)) if call.command == Command::MessageFollow => {
                    notices.push(call)
                }
                _ => {}
            }
        }
    })
    .await
    .expect("the reply and the follow notice in time");
    let (echoed, payload) = reply.unwrap();
    assert_eq!(echoed, request_op, "the reply route kept the operation");
    let counted: Counted = zlink::cbor_decode(&payload).unwrap();
    assert_eq!(counted.by, "b", "relayed to the new owner, run there only");
    assert_eq!(counted.total, 5, "the payload arrived as sent");
    assert_eq!(
        counted.generation, created.generation,
        "the same incarnation"
    );
    assert_eq!(
        counted.operation,
        Some(request_op),
        "the new owner's handler saw the sender's operation"
    );
    wait_until(WAIT, "the one-way ran on b", || async {
        !m.seen.logged.lock().unwrap().is_empty()
    })
    .await;
    assert_eq!(
        m.seen.logged.lock().unwrap().clone(),
        [("b".to_string(), 9, Some(send_op))],
        "the one-way ran once, on b, under its sender's operation"
    );
    assert_eq!(
        record_reads(a) - reads_before,
        0,
        "the relay read no record"
    );
    // Command 50: one notice for p and this pair of routes, naming the operation and the
    // reply route of the message it followed, and both routes whole.
    let later = zlink_tests::raw_peer::envelopes_before_probe_ack(&mut p, 5150).await;
    notices.extend(later.into_iter().filter_map(|e| match e {
        Envelope::Call(call) if call.command == Command::MessageFollow => Some(call),
        _ => None,
    }));
    assert_eq!(notices.len(), 1, "one notice per sender and route pair");
    #[derive(Deserialize)]
    struct Notice {
        kind: char,
        id: String,
        source_fence: NoticeFence,
        source_route: NoticeRoute,
        target_fence: NoticeFence,
        target_route: NoticeRoute,
        hops: u8,
        queued_messages: u64,
        queued_bytes: u64,
        operation: u64,
        reply_correlation: u64,
    }
    #[derive(Deserialize)]
    struct NoticeFence {
        object_generation: u64,
        owner_generation: u64,
        lease_generation: u64,
    }
    #[derive(Deserialize)]
    struct NoticeRoute {
        rid: String,
    }
    let notice: Notice = zlink::cbor_decode(&notices[0].payload).unwrap();
    assert_eq!((notice.kind, notice.id.as_str()), ('a', "w8"));
    assert_eq!(
        (notice.operation, notice.reply_correlation),
        (request_op, correlation)
    );
    assert_eq!(notice.hops, 1);
    assert!(notice.queued_messages >= 1 && notice.queued_bytes > 0);
    let fence_of = |f: &NoticeFence| zlink::wire::RouteFence {
        object_generation: f.object_generation,
        owner_generation: f.owner_generation,
        lease_generation: f.lease_generation,
    };
    assert_eq!(fence_of(&notice.source_fence), old_fence);
    assert_eq!(fence_of(&notice.target_fence), new_fence);
    assert_eq!(
        (
            notice.source_route.rid.as_str(),
            notice.target_route.rid.as_str()
        ),
        ("a", "b")
    );
    stop(m.nodes).await;
}

/// Seed 000 §5, global ID lookup, item 4.
#[tokio::test]
async fn a_cached_route_ends_at_its_max_age_and_at_once_on_a_later_authority_a_stale_result_or_a_store_recovery(
) {
    // "The positive cache does not exceed the owner admission deadline or
    // RouteCacheMaxAge, and is removed immediately on a higher StoreVersion, a stale
    // result, Store recovery and lease invalidation."
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let gate = Arc::new(Semaphore::new(Semaphore::MAX_PERMITS));
    let server = start(
        discovered_node("server", &store, quick_lease())
            .spot_type(Gated::spot_type(move |_| Gated { gate: gate.clone() }).unwrap()),
    )
    .await;
    let (caller, faulty) = faulty_caller(&store).await;
    server
        .spots()
        .get_or_create("c4", "gated", Bytes::new())
        .await
        .unwrap();
    let (reads, _) = reads_of(&caller, "c4", 3).await;
    assert_eq!(reads, 1, "one read, then hits");
    // RouteCacheMaxAge, set while running, bounds the entries admitted from now on.
    caller
        .set_route_cache_max_age(Duration::from_millis(300))
        .unwrap();
    // Store recovery: a read fails (the store is down), the next one succeeds, and every
    // route confirmed before the outage goes.
    faulty.set_down(true);
    assert!(GatedClient::new(&caller, "absent")
        .ping(&Ping)
        .await
        .is_err());
    faulty.set_down(false);
    let (reads, results) = reads_of(&caller, "absent", 1).await;
    assert_eq!(reads, 1);
    assert!(results[0]
        .as_ref()
        .is_err_and(|e| e.is(ErrorKind::NotFound)));
    let (reads, _) = reads_of(&caller, "c4", 2).await;
    assert_eq!(reads, 1, "the store came back: c4 is read again, once");
    // That entry came under the new max age: within it a hit, past it a read.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let (reads, _) = reads_of(&caller, "c4", 2).await;
    assert_eq!(reads, 1, "past RouteCacheMaxAge the route is read again");
    // A stale result: the owner no longer has the Spot (closed behind the caller's back).
    // The owner refuses the call (nothing ran), the route goes at once, and the call
    // ends as what the store says now: there is no c4. The next call reads again.
    let owned = server.spots().find("c4").await.unwrap().unwrap();
    server.spots().close(&owned).await.unwrap();
    let stale = GatedClient::new(&caller, "c4").ping(&Ping).await;
    assert!(
        stale.as_ref().is_err_and(|e| e.is(ErrorKind::NotFound)),
        "{stale:?}"
    );
    let (reads, results) = reads_of(&caller, "c4", 1).await;
    assert_eq!(reads, 1, "the stale route was dropped");
    assert!(results[0]
        .as_ref()
        .is_err_and(|e| e.is(ErrorKind::NotFound)));
    stop([caller, server]).await;

    // A later authority: b cached the route to a; the object then moved to b. The commit
    // b wrote is a later authority than its entry, which goes: b's next call reads once
    // and runs the Actor where it now is, not over the detour.
    use zlink_tests::relocating::{mesh, Add, CounterClient};
    let m = mesh(&["a", "b"], None).await;
    let (a, b) = (&m.nodes[0], &m.nodes[1]);
    a.actors().create("m4", "counter").await.unwrap();
    let from_b = CounterClient::new(b, "m4");
    assert_eq!(from_b.add(Add(1)).await.unwrap().by, "a");
    let before = record_reads(b);
    assert_eq!(from_b.add(Add(1)).await.unwrap().by, "a");
    assert_eq!(record_reads(b) - before, 0, "b's route to a is cached");
    a.actors().relocate("m4", Some("b")).await.unwrap();
    let before = record_reads(b);
    assert_eq!(from_b.add(Add(1)).await.unwrap().by, "b");
    assert_eq!(
        record_reads(b) - before,
        1,
        "the later authority dropped the entry"
    );
    stop(m.nodes).await;
}

/// Calls `counter` from `caller` (each call answered by the new owner `b`) until one of
/// them reads the Location Store, failing past `limit` after `since`: when that read came.
async fn detour_until_read(
    caller: &Runtime,
    counter: &zlink_tests::relocating::CounterClient,
    since: tokio::time::Instant,
    limit: Duration,
) -> Duration {
    use zlink_tests::relocating::Add;
    let reads = record_reads(caller);
    while record_reads(caller) == reads {
        assert_eq!(counter.add(Add(0)).await.unwrap().by, "b");
        assert!(
            since.elapsed() < limit,
            "the cached route outlived {limit:?}"
        );
    }
    since.elapsed()
}

/// A timing change that was refused: it failed `InvalidArgument`.
fn refused_as_invalid(change: zlink::Result<()>) {
    let refused = change.unwrap_err();
    assert!(
        matches!(refused, zlink::Error::InvalidArgument(_)),
        "{refused}"
    );
}

/// Seed 000 §5, global ID lookup, item 6.
#[tokio::test]
async fn a_cached_route_never_outlives_the_message_follow_window_of_its_old_owner() {
    // "The lifetime of the positive route cache does not exceed MessageFollowDuration."
    use zlink_tests::relocating::{counter_type, Add, CounterClient, Seen};
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let seen = Seen::default();
    // The old owner follows for 6 s; the client caches for 1 s and loses every notice,
    // so only the cache age ends its detour.
    let mut nodes = Vec::new();
    for (rid, weight) in [("a", 100), ("b", 0)] {
        let builder = discovered_node(rid, &store, quick_lease())
            .placement_weight(weight)
            .route_cache_max_age(Duration::from_secs(1))
            .message_follow_duration(Duration::from_secs(6))
            .actor_type(counter_type(rid, &seen));
        nodes.push(start(builder).await);
    }
    let client = start(
        discovered_node("client", &store, quick_lease())
            .route_cache_max_age(Duration::from_secs(1))
            .message_follow_duration(Duration::from_secs(6))
            .test_drop_follow_notices(),
    )
    .await;
    // The rule holds at run time on every node: a max age within 5 s of the follow
    // duration is refused and changes nothing; 0 turns either off.
    refused_as_invalid(client.set_route_cache_max_age(Duration::from_millis(1001)));
    refused_as_invalid(client.set_message_follow_duration(Duration::from_millis(5999)));
    assert_eq!(
        client.route_cache_max_age().unwrap(),
        Duration::from_secs(1)
    );
    wait_until(WAIT, "the client sees both servers", || async {
        client
            .discovery()
            .status()
            .is_some_and(|s| s.members.iter().filter(|m| m.entry_spot.is_some()).count() == 2)
            && peer_rids(&client).len() == 2
    })
    .await;
    client.actors().create("f6", "counter").await.unwrap();
    let counter = CounterClient::new(&client, "f6");
    counter.add(Add(1)).await.unwrap();
    nodes[0].actors().relocate("f6", Some("b")).await.unwrap();
    let moved_at = tokio::time::Instant::now();
    // Every call succeeds: first over the detour, and from the read after the cached
    // route's age ran out, straight to b, long before a stops following.
    let expired_after =
        detour_until_read(&client, &counter, moved_at, Duration::from_secs(6)).await;
    assert!(
        expired_after <= Duration::from_secs(1) + Duration::from_millis(500),
        "the cached route ended at its max age, {expired_after:?} after the move"
    );
    let before = record_reads(&client);
    assert_eq!(counter.add(Add(0)).await.unwrap().by, "b");
    assert_eq!(record_reads(&client) - before, 0, "the new route is cached");
    nodes.push(client);
    stop(nodes).await;
}

/// Seed 000 §5, session bind and relay, item 13.
#[tokio::test]
async fn session_relay_disconnect_and_actor_push_use_the_stored_binding_route_without_store_reads()
{
    // "Session relay, disconnect and Actor push use the stored binding route without
    // looking up the Location Store for each message."
    use serde_json::json;
    use zlink_testkit::stream_client::{kind, StreamClient};
    use zlink_tests::bound_sessions::{cluster_with, Disconnects};
    let disconnects = Disconnects::default();
    let (cluster, address) = cluster_with(&disconnects).await;
    let mut client = StreamClient::tcp(&address).await.unwrap();
    let bound = client
        .call_json(1, "login", json!({ "player": "ivy" }), WAIT)
        .await
        .unwrap();
    assert_eq!(
        bound.value()["owner"],
        "n1",
        "the Actor lives on the other node"
    );
    // The gateway has no route cache: any lookup it made would read the store.
    let reads = cluster.store_reads(0);
    let owner_reads = cluster.store_reads(1);
    for n in 1..=10u64 {
        client.send_json("move", json!({ "n": n })).await.unwrap();
    }
    let mut pushes = Vec::new();
    while pushes.len() < 10 {
        let packet = client.next(WAIT).await.expect("a push");
        assert_eq!((packet.kind, packet.name.as_str()), (kind::SEND, "moved"));
        pushes.push(packet.value()["n"].as_u64().unwrap());
    }
    assert_eq!(
        pushes,
        (1..=10).collect::<Vec<_>>(),
        "relayed and pushed, in order"
    );
    // The disconnect of the binding reaches the Actor's Spot on n1, once.
    client.send_json("logout", json!(null)).await.unwrap();
    wait_until(WAIT, "n1's Entry Spot heard the disconnect", || async {
        !disconnects.0.lock().unwrap().is_empty()
    })
    .await;
    assert_eq!(disconnects.0.lock().unwrap().clone(), ["ivy"]);
    assert_eq!(
        cluster.store_reads(0),
        reads,
        "10 relays, 10 pushes and a disconnect: no Location Store read on the gateway"
    );
    assert_eq!(
        cluster.store_reads(1),
        owner_reads,
        "nor on the Actor's owner, which pushed"
    );
    cluster.shutdown().await;
}

/// Seed 000 §5, movement and Message Follow, item 9.
#[tokio::test]
async fn a_valid_follow_notice_drops_the_senders_route_at_once_and_a_lost_one_leaves_it_to_expire()
{
    // "On receiving a valid messageFollow notification, the sending side's cache is
    // invalidated immediately so that the next lookup uses the new owner. If the
    // notification is lost, the new owner is looked up after the existing cache lifetime
    // ends."
    use zlink_tests::relocating::{mesh, Add, CounterClient};
    let m = mesh(&["a", "b"], None).await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    // A second caller loses every notice; its routes live 1 s.
    let deaf = start(
        discovered_node("deaf", &m.store, quick_lease())
            .route_cache_max_age(Duration::from_secs(1))
            .test_drop_follow_notices(),
    )
    .await;
    wait_until(WAIT, "deaf sees both servers", || async {
        let peers = peer_rids(&deaf);
        ["a", "b"].iter().all(|s| peers.iter().any(|p| p == s))
    })
    .await;
    client.actors().create("n9", "counter").await.unwrap();
    let (heard, lost) = (
        CounterClient::new(client, "n9"),
        CounterClient::new(&deaf, "n9"),
    );
    assert_eq!(heard.add(Add(1)).await.unwrap().by, "a");
    assert_eq!(lost.add(Add(1)).await.unwrap().by, "a");
    a.actors().relocate("n9", Some("b")).await.unwrap();
    let moved_at = tokio::time::Instant::now();
    // The first call on the old route is relayed (no read) and earns the notice; the
    // next one reads the new owner once, and hits follow.
    let reads = record_reads(client);
    assert_eq!(heard.add(Add(1)).await.unwrap().by, "b");
    assert_eq!(
        record_reads(client),
        reads,
        "the relayed call read no store"
    );
    wait_until(WAIT, "the notice dropped the cached route", || async {
        let before = record_reads(client);
        heard.add(Add(0)).await.unwrap();
        record_reads(client) == before + 1
    })
    .await;
    assert!(
        moved_at.elapsed() < Duration::from_secs(5),
        "dropped at once, long before its 15 s max age"
    );
    let direct = record_reads(client);
    heard.add(Add(0)).await.unwrap();
    assert_eq!(record_reads(client), direct, "then b is cached");
    // Without the notice, deaf keeps the detour until its route's age runs out.
    assert!(
        detour_until_read(&deaf, &lost, moved_at, WAIT).await >= Duration::from_millis(500),
        "the lost notice left the route until its age ran out"
    );
    let mut nodes = m.nodes;
    nodes.push(deaf);
    stop(nodes).await;
}

/// Seed 000 §5, session bind and relay, item 12.
#[tokio::test]
async fn bind_or_get_returns_the_sessions_binding_of_that_incarnation_wherever_it_moved_without_a_bind(
) {
    // "Bind uses the location of the caller's ActorRef as the initial route, and only a
    // validated route is stored in the Session owner binding."
    use serde_json::json;
    use zlink_testkit::stream_client::kind;
    use zlink_tests::walking_sessions::*;
    let (cluster, mut client) = walkers(DEFAULT_SEAL_TIMEOUT, |node| node).await;
    let from = join_walker(&mut client).await;
    let to = other_walker_node(&from);
    let moved = cluster
        .node(index_of(&from))
        .actors()
        .relocate("w", Some(to))
        .await
        .unwrap();
    assert_eq!(moved.rid, to);
    // A plain bind of the reference taken before the move goes where it points, to a node
    // that no longer runs the walker: refused, and the binding stays as it was.
    let plain = client
        .call_json(2, "rejoin", json!({ "plain": true }), WAIT)
        .await
        .unwrap();
    assert_eq!(plain.kind, kind::ERROR, "{plain:?}");
    // bind_or_get finds this session's binding of that incarnation, where it is now.
    let got = client
        .call_json(3, "rejoin", json!({ "plain": false }), WAIT)
        .await
        .unwrap();
    assert_eq!(got.kind, kind::RESPONSE, "{:?}", got.error());
    assert_eq!(got.value()["owner"], to);
    client.send_json("step", json!({ "n": 1 })).await.unwrap();
    let push = client.next(WAIT).await.expect("the step's push");
    assert_eq!(
        push.value()["by"],
        to,
        "the binding carries relays: {push:?}"
    );
    cluster.shutdown().await;
}

/// Seed 000 §5, session bind and relay, item 14.
#[tokio::test]
async fn moving_one_bound_actor_keeps_the_other_actors_routes_of_the_same_session() {
    // "Actor relocation applies command 44 sessionRelocationRoute of the same
    // ObjectGeneration one-way, changing only that Actor's binding route while keeping the
    // routes of other Actors not included in the relocation and the physical STREAM
    // connection."
    use serde_json::json;
    use zlink_testkit::stream_client::kind;
    use zlink_tests::walking_sessions::*;
    let (cluster, mut client) = walkers(DEFAULT_SEAL_TIMEOUT, |node| node).await;
    // Both walkers made on n1, then bound by one session.
    for id in ["a", "b"] {
        cluster
            .node(1)
            .actors()
            .create(id, Walker::STABLE_TYPE)
            .await
            .unwrap();
    }
    let owner_of = |id: &str| {
        let node = cluster.node(0).handle().clone();
        let id = id.to_string();
        async move { node.actors().find(&id).await.unwrap().unwrap().rid }
    };
    let (a_at, b_at) = (owner_of("a").await, owner_of("b").await);
    for (seq, id) in [(1, "a"), (2, "b")] {
        let joined = client
            .call_json(seq, "join", json!({ "walker": id }), WAIT)
            .await
            .unwrap();
        assert_eq!(joined.kind, kind::RESPONSE);
    }
    // Move only `a`, to the other walker node.
    let a_index = if a_at == "n1" { 1 } else { 2 };
    let to = if a_at == "n1" { "n2" } else { "n1" };
    let moved = cluster
        .node(a_index)
        .actors()
        .relocate("a", Some(to))
        .await
        .unwrap();
    assert_eq!(moved.rid, to);
    let step = |walker: &str, n: u64| {
        let mut packet = zlink_testkit::stream_client::StreamPacket::json(
            kind::SEND,
            "step",
            &json!({ "n": n }),
        );
        packet.metadata.push(("walker".into(), walker.into()));
        packet
    };
    client.write(&step("a", 1)).await.unwrap();
    client.write(&step("b", 2)).await.unwrap();
    let mut by = std::collections::BTreeMap::new();
    while by.len() < 2 {
        let push = client.next(WAIT).await.unwrap();
        by.insert(
            push.value()["n"].as_u64().unwrap(),
            push.value()["by"].as_str().unwrap().to_string(),
        );
    }
    assert_eq!(by[&1], to, "a's route switched to its new owner");
    assert_eq!(by[&2], b_at, "b's route is untouched");
    cluster.shutdown().await;
}

/// Seed 000 §5, session bind and relay, item 15.
#[tokio::test]
async fn command_44_is_one_way_and_never_resent_the_target_does_not_wait_and_a_lost_one_ends_the_session_on_its_seal_timeout(
) {
    // "Command 44 has no response and is not resent as a request. Target Actor
    // processing does not wait for it to be applied, and the source Message Follow route
    // delivers messages that arrive via the previous route for the duration of
    // MessageFollowDuration."
    use serde_json::json;
    use std::time::Instant;
    use zlink::session::CloseReason;
    use zlink::RuntimeBuilder;
    use zlink_tests::walking_sessions::*;
    // Both walker nodes lose every 44 commit they send.
    let seal_timeout = Duration::from_millis(1500);
    let (cluster, mut client) =
        walkers(seal_timeout, RuntimeBuilder::test_drop_session_routes).await;
    let from = join_walker(&mut client).await;
    let to = other_walker_node(&from);
    client.send_json("step", json!({ "n": 1 })).await.unwrap();
    assert_eq!(client.next(WAIT).await.unwrap().value()["by"], from);
    // The move completes although the session owner never hears the new route: the
    // target does not wait for 44, and serves at once.
    let moved = cluster
        .node(index_of(&from))
        .actors()
        .relocate("w", Some(to))
        .await
        .unwrap();
    let sealed_at = Instant::now();
    assert_eq!(moved.rid, to);
    let located = WalkerClient::new(cluster.node(0), "w")
        .locate(&Locate)
        .await
        .unwrap();
    assert_eq!(
        located.rid, to,
        "the target dispatches while the session is sealed"
    );
    // What the session relays now is held by the seal; no route change ever lifts it
    // (44 is not resent), so the session ends on its seal timeout, and nothing held is
    // delivered to the Actor by any other path.
    client.send_json("step", json!({ "n": 2 })).await.unwrap();
    let mut after = Vec::new();
    let closing = loop {
        match client.next(seal_timeout + WAIT).await {
            Ok(packet) => match packet.closing() {
                Some(closing) => break closing,
                None => after.push(packet.value()),
            },
            Err(end) => panic!("the session ended without its notice: {end:?}"),
        }
    };
    assert_eq!(closing.0, CloseReason::ServerDrain as u8, "{closing:?}");
    assert!(
        sealed_at.elapsed() >= seal_timeout - Duration::from_millis(100),
        "the session ended on the seal timeout, not before: {:?}",
        sealed_at.elapsed()
    );
    assert!(
        after.is_empty(),
        "the held step was not delivered: {after:?}"
    );
    assert!(
        client.closed_with(WAIT).await.is_ok(),
        "the connection closed"
    );
    cluster.shutdown().await;
}

/// Seed 000 §5, movement and Message Follow, item 10.
#[tokio::test]
async fn a_per_actor_spot_moves_its_shell_then_each_member_and_to_spot_and_to_actor_follow_their_own_owners(
) {
    // "In a PerActor User Spot relocation, ToSpot uses the Spot authority, and ToActor
    // uses the per-Actor current owner. The relocation temporary queues of the Spot and of
    // the Actors are registered independently and switched atomically to the existing
    // dispatch."
    use zlink::object::Execution;
    use zlink_tests::membership_rooms::*;
    let redis = RedisServer::start().expect("redis-server");
    let log = Log::default();
    // a alone: the room and its players start there.
    let a = node_with_players("a", &redis, Execution::PerActor, &log, 0).await;
    a.spots().get_or_create("pa", "room", "").await.unwrap();
    for player in ["m1", "m2"] {
        a.actors().create(player, "player").await.unwrap();
        enters(&a, player, "pa", "").await;
    }
    // b takes one player only: the second member cannot follow.
    let b = node_with_players("b", &redis, Execution::PerActor, &Log::default(), 1).await;
    zlink_testkit::wait_until(
        WAIT,
        "a sees b's Entry Spot and is connected to b",
        || async {
            a.discovery().status().is_some_and(|s| {
                s.members
                    .iter()
                    .any(|m| m.rid == "b" && m.entry_spot.is_some())
            }) && peer_rids(&a).iter().any(|p| p == "b")
        },
    )
    .await;
    log.lock().unwrap().clear();
    let moved = a.spots().relocate("pa", Some("b")).await.unwrap();
    assert_eq!(moved.rid, "b");
    // ToSpot follows the Spot's authority; ToActor follows each member's own owner.
    let owners: Vec<String> = owners_of(&a, &["m1", "m2"]).await;
    assert_eq!(
        owners,
        ["b", "a"],
        "m1 moved with its Spot; m2 was refused and stays"
    );
    assert_eq!(
        RoomClient::new(&a, "pa")
            .name(&Name)
            .await
            .unwrap()
            .0
            .as_deref(),
        Some("pa")
    );
    for player in ["m1", "m2"] {
        assert_eq!(
            PlayerClient::new(&a, player)
                .where_am_i(&Where)
                .await
                .unwrap()
                .0
                .as_deref(),
            Some("pa"),
            "{player} is still a member, wherever it runs"
        );
    }
    assert!(
        log.lock().unwrap().is_empty(),
        "a host move calls no membership callback: {:?}",
        log.lock().unwrap()
    );
    stop([a, b]).await;
}
