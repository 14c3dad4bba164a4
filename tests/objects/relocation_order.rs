//! Who learns of a move, and in what order one sender's messages land across it (seed
//! 000 §2.2, §2.5; DESIGN §7 "one origin to one target is FIFO"): the old owner's own
//! callers, a lookup that races the commit, and a relayed one-way followed by a direct
//! one. Real TCP and a real `redis-server`, but for the reorder test, which needs one
//! slow relay hop on demand (the in-memory network's delay).

use std::sync::Arc;
use std::time::Duration;
use zlink::TestFaults;

use zlink::Runtime;
use zlink_testkit::{wait_until, LinkFault, MemNetwork};
use zlink_tests::relocating::*;
use zlink_tests::*;

/// Three servers `a`, `b`, `c` (new objects go to `a`); `a` never sends its cutover, so
/// a move away from `a` commits only at the 1000 ms fallback: a wide window between the
/// hand-over and the commit. The servers hold the default owner lease (15 s), so a route
/// stays cached for RouteCacheMaxAge, not only until a short test lease's deadline.
async fn slow_commit_mesh() -> Mesh {
    mesh_custom(&["a", "b", "c"], 0, |rid, _, builder| {
        let builder = builder.owner_lease(zlink::store::OwnerLeaseSettings::default());
        if rid == "a" {
            builder.test_drop_relocation_cutover()
        } else {
            builder
        }
    })
    .await
}

fn relayed(rt: &Runtime) -> u64 {
    rt.status().relayed_by_message_follow
}

/// An object of kind `Spot` or `Actor`, as the tests below drive it.
#[derive(Clone, Copy)]
enum Object {
    Actor(&'static str),
    Spot(&'static str),
}

impl Object {
    async fn create(&self, on: &zlink::Handle) {
        match self {
            Object::Actor(id) => {
                assert_eq!(on.actors().create(id, "counter").await.unwrap().rid, "a")
            }
            Object::Spot(id) => {
                on.spots().get_or_create(id, "ledger", "").await.unwrap();
                assert_eq!(on.spots().find(id).await.unwrap().unwrap().rid, "a");
            }
        }
    }

    /// One request from `from`; returns the node that ran it.
    async fn call(&self, from: &zlink::Handle) -> zlink::Result<String> {
        match self {
            Object::Actor(id) => CounterClient::new(from, *id)
                .add(Add(1))
                .await
                .map(|c| c.by),
            Object::Spot(id) => LedgerClient::new(from, *id).show(&Show).await.map(|h| h.by),
        }
    }

    async fn relocate(&self, on: &zlink::Handle, to: &str) -> zlink::Result<String> {
        match self {
            Object::Actor(id) => on.actors().relocate(id, Some(to)).await.map(|r| r.rid),
            Object::Spot(id) => on.spots().relocate(id, Some(to)).await.map(|r| r.rid),
        }
    }

    fn owned(&self, rt: &Runtime) -> usize {
        let status = rt.status();
        match self {
            Object::Actor(_) => status.actors_owned,
            Object::Spot(_) => status.spots_owned,
        }
    }
}

/// The reproduction: a caller on the node an object left looks it up between the
/// hand-over and the commit (the store still names its own node), and then keeps calling
/// while the object moves on nine more times. Every call must reach it: the caller learns
/// of each move, and never falls 8 moves behind.
async fn the_old_owners_caller_learns_of_every_move(object: Object) {
    let m = slow_commit_mesh().await;
    let (a, b, c) = (&m.nodes[0], &m.nodes[1], &m.nodes[2]);
    object.create(a).await;
    assert_eq!(object.call(a).await.unwrap(), "a", "cached: a itself");
    let owned = object.owned(a);
    let moving = {
        let a = a.handle().clone();
        tokio::spawn(async move { object.relocate(&a, "b").await })
    };
    wait_until(
        WAIT,
        "a handed the object over (its commit is 1 s away)",
        || async { object.owned(a) < owned },
    )
    .await;
    // The lookup races the commit: the store still says a.
    assert_eq!(object.call(a).await.unwrap(), "b");
    assert_eq!(moving.await.unwrap().unwrap(), "b");
    let mut at = "b";
    for n in 0..9 {
        let (from, to) = if at == "b" { (b, "c") } else { (c, "b") };
        assert_eq!(object.relocate(from, to).await.unwrap(), to, "move {n}");
        at = to;
        assert_eq!(
            object.call(a).await.unwrap(),
            to,
            "the old owner's caller after move {n}"
        );
    }
    stop(m.nodes).await;
}

#[tokio::test]
async fn the_old_owners_caller_learns_of_every_move_actor() {
    the_old_owners_caller_learns_of_every_move(Object::Actor("old-owner-actor")).await;
}

#[tokio::test]
async fn the_old_owners_caller_learns_of_every_move_spot() {
    the_old_owners_caller_learns_of_every_move(Object::Spot("old-owner-spot")).await;
}

/// A lookup that begins after the hand-over and ends before the commit reads the old
/// owner: it is used for that call (relayed), never cached. After the commit the next
/// call reads the new owner once and then goes direct.
async fn a_lookup_racing_the_commit_is_not_cached(object: Object) {
    let m = slow_commit_mesh().await;
    let a = &m.nodes[0];
    object.create(a).await;
    assert_eq!(object.call(a).await.unwrap(), "a");
    let owned = object.owned(a);
    let moving = {
        let a = a.handle().clone();
        tokio::spawn(async move { object.relocate(&a, "b").await })
    };
    wait_until(WAIT, "a handed the object over", || async {
        object.owned(a) < owned
    })
    .await;
    // (a's own move reads the store meanwhile, so only the relay is counted here.)
    let before = relayed(a);
    assert_eq!(object.call(a).await.unwrap(), "b");
    assert!(relayed(a) > before, "the racing call was relayed");
    assert_eq!(moving.await.unwrap().unwrap(), "b");
    // Not cached: the first call after the commit reads the store again.
    let reads = record_reads(a);
    assert_eq!(object.call(a).await.unwrap(), "b");
    assert_eq!(record_reads(a), reads + 1, "the old route was not cached");
    // Then b is cached, and a relays nothing for its own calls.
    let (reads, before) = (record_reads(a), relayed(a));
    for _ in 0..5 {
        assert_eq!(object.call(a).await.unwrap(), "b");
    }
    assert_eq!(record_reads(a), reads, "b is cached");
    assert_eq!(relayed(a), before, "direct, not through a's follow route");
    stop(m.nodes).await;
}

#[tokio::test]
async fn a_lookup_racing_the_commit_is_not_cached_actor() {
    a_lookup_racing_the_commit_is_not_cached(Object::Actor("racing-actor")).await;
}

#[tokio::test]
async fn a_lookup_racing_the_commit_is_not_cached_spot() {
    a_lookup_racing_the_commit_is_not_cached(Object::Spot("racing-spot")).await;
}

/// A node on the in-memory network, finding its peers through the shared in-memory
/// `store`.
fn mem_node(
    net: &MemNetwork,
    rid: &str,
    store: &Arc<dyn zlink::store::LocationStore>,
) -> zlink::RuntimeBuilder {
    Runtime::builder()
        .mesh_name(MESH)
        .rid(rid)
        .listen(format!("mem://{rid}:1"))
        .transport(net.host(rid))
        .location_store(store.clone())
        .relocation_store(relocation_store())
        .owner_lease(quick_lease())
        .discovery_interval(Duration::from_millis(50))
}

/// One sender (on `b`, the node the Actor moves to) sends one-way 1 on its cached route
/// to `a`, which relays it over a link slowed to 3 s; the move commits (at the fallback)
/// meanwhile, and the sender's next message finds the Actor on its own node. That one
/// must not run before the relayed one: the sender switches to the direct route only
/// behind a barrier down the old one.
#[tokio::test]
async fn one_sender_relayed_then_direct_is_applied_in_order() {
    let net = MemNetwork::new();
    let store = <dyn zlink::store::LocationStore>::in_memory();
    let seen = Seen::default();
    let server = |rid: &str, weight: u32| {
        mem_node(&net, rid, &store)
            .placement_weight(weight)
            .actor_type(counter_type(rid, &seen))
    };
    let a = start(server("a", 100).test_drop_relocation_cutover()).await;
    // The direct one-way waits for the barrier, which waits for the slowed link.
    let b = start(server("b", 0).send_timeout(Duration::from_secs(10))).await;
    for (rt, other) in [(&a, "b"), (&b, "a")] {
        wait_until(WAIT, "the two servers see each other", || async {
            peer_rids(rt) == [other]
                && rt
                    .discovery()
                    .status()
                    .is_some_and(|s| s.members.iter().any(|m| m.entry_spot.is_some()))
        })
        .await;
    }
    a.actors().create("in-order", "counter").await.unwrap();
    let from_b = CounterClient::new(&b, "in-order");
    assert_eq!(from_b.add(Add(0)).await.unwrap().by, "a", "b caches a");
    let moving = {
        let a = a.handle().clone();
        tokio::spawn(async move { a.actors().relocate("in-order", Some("b")).await })
    };
    wait_until(WAIT, "a handed the Actor over", || async {
        a.status().actors_owned == 0
    })
    .await;
    net.set_fault("a", "b", LinkFault::Delay(Duration::from_secs(3)));
    let before = relayed(&a);
    from_b.log(Log(1)).await.unwrap();
    wait_until(WAIT, "a relayed one-way 1", || async {
        relayed(&a) > before
    })
    .await;
    // The fallback commit does not wait for the slowed link.
    assert_eq!(moving.await.unwrap().unwrap().rid, "b");
    from_b.log(Log(2)).await.unwrap();
    net.clear_fault("a", "b");
    let history = from_b.show(&Show).await.unwrap();
    assert_eq!(history.by, "b");
    assert_eq!(
        history.log,
        [1, 2],
        "one sender's one-ways in the order sent"
    );
    stop([a, b]).await;
}
