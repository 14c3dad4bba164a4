//! Relocation under load (seed 000 §2.5, seed 002 §5; DESIGN §7): three nodes over real
//! TCP and a real `redis-server` (both the Location Store and the Relocation Store), ten
//! `preserve` Actors and ten `preserve` Spots moved back and forth among them hundreds of
//! times a second, while two senders on *every* node (the one an object leaves, the one
//! it lands on, and the third) call every object every few milliseconds, one-ways and
//! requests numbered per sender and object. Nothing may be lost, duplicated or reordered,
//! and no call may fail.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::object::{Actor, ActorContext, RelocationState, SpotContext};
use zlink::Runtime;
use zlink_testkit::{wait_until, RedisServer};
use zlink_tests::*;

/// Actors `tally-0..10` and Spots `tally-spot-0..10`.
const ACTORS: usize = 10;
const SPOTS: usize = 10;
const OBJECTS: usize = ACTORS + SPOTS;
/// Senders per node.
const SENDERS_PER_NODE: u8 = 2;
const LOAD_FOR: Duration = Duration::from_secs(20);
/// Each of the three relocators moves an object this often: about 250 moves a second in
/// all, each object about 12 times a second, while each sender calls each object more
/// often than that.
const MOVE_EVERY: Duration = Duration::from_millis(10);

/// A request: sender `sender`'s message number `seq` to this object.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Accepted)]
pub struct Count {
    pub sender: u8,
    pub seq: u64,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Accepted {
    pub total: u64,
}

/// The same, one way.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct CountNote {
    pub sender: u8,
    pub seq: u64,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Tallied)]
pub struct Report;

#[derive(Debug, Clone, Default, Serialize, Deserialize, zlink::Message)]
pub struct Tallied {
    pub total: u64,
    /// Messages taken per sender.
    pub per_sender: HashMap<u8, u64>,
    /// Messages that arrived with a sequence number not above the last one of their
    /// sender: a duplicate or a reordering.
    pub out_of_order: u64,
    /// The first few of them: (sender, last seq, this seq).
    pub first_out_of_order: Vec<(u8, u64, u64)>,
}

#[derive(Default, Serialize, Deserialize)]
pub struct Tally {
    state: Tallied,
    last: HashMap<u8, u64>,
}

impl Tally {
    fn take(&mut self, sender: u8, seq: u64) {
        let last = self.last.entry(sender).or_insert(0);
        if seq <= *last {
            self.state.out_of_order += 1;
            if self.state.first_out_of_order.len() < 5 {
                self.state.first_out_of_order.push((sender, *last, seq));
            }
        }
        *last = seq;
        self.state.total += 1;
        *self.state.per_sender.entry(sender).or_insert(0) += 1;
    }
}

impl RelocationState for Tally {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        serde_json::to_vec(self).map_err(|e| zlink::Error::InvalidArgument(e.to_string()))
    }

    fn restore(&mut self, state: &[u8]) -> zlink::Result<()> {
        *self = serde_json::from_slice(state)
            .map_err(|e| zlink::Error::InvalidArgument(e.to_string()))?;
        Ok(())
    }
}

#[zlink::actor(type = "tally", relocation = preserve)]
impl Tally {
    #[handler]
    async fn count(&mut self, count: Count, _ctx: &ActorContext) -> zlink::Result<Accepted> {
        self.take(count.sender, count.seq);
        Ok(Accepted {
            total: self.state.total,
        })
    }

    #[handler]
    async fn count_note(&mut self, note: CountNote, _ctx: &ActorContext) -> zlink::Result<()> {
        self.take(note.sender, note.seq);
        Ok(())
    }

    #[handler]
    async fn report(&mut self, _report: Report, _ctx: &ActorContext) -> zlink::Result<Tallied> {
        Ok(self.state.clone())
    }
}

impl Actor for Tally {}

/// The same tally as a Spot.
#[derive(Default)]
pub struct SpotTally(Tally);

impl RelocationState for SpotTally {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        self.0.capture()
    }

    fn restore(&mut self, state: &[u8]) -> zlink::Result<()> {
        self.0.restore(state)
    }
}

#[zlink::spot(type = "tally-spot", relocation = preserve)]
impl SpotTally {
    #[handler]
    async fn count(&mut self, count: Count, _ctx: &SpotContext) -> zlink::Result<Accepted> {
        self.0.take(count.sender, count.seq);
        Ok(Accepted {
            total: self.0.state.total,
        })
    }

    #[handler]
    async fn count_note(&mut self, note: CountNote, _ctx: &SpotContext) -> zlink::Result<()> {
        self.0.take(note.sender, note.seq);
        Ok(())
    }

    #[handler]
    async fn report(&mut self, _report: Report, _ctx: &SpotContext) -> zlink::Result<Tallied> {
        Ok(self.0.state.clone())
    }
}

impl zlink::object::Spot for SpotTally {}

/// Object `n` of the test: an Actor below [`ACTORS`], a Spot above.
fn object_id(n: usize) -> String {
    if n < ACTORS {
        format!("tally-{n}")
    } else {
        format!("tally-spot-{}", n - ACTORS)
    }
}

fn is_actor(n: usize) -> bool {
    n < ACTORS
}

async fn count(rt: &zlink::Handle, n: usize, sender: u8, seq: u64) -> zlink::Result<()> {
    let count = Count { sender, seq };
    if is_actor(n) {
        TallyClient::new(rt, object_id(n))
            .count(&count)
            .await
            .map(|_| ())
    } else {
        SpotTallyClient::new(rt, object_id(n))
            .count(&count)
            .await
            .map(|_| ())
    }
}

async fn note(rt: &zlink::Handle, n: usize, sender: u8, seq: u64) -> zlink::Result<()> {
    let note = CountNote { sender, seq };
    if is_actor(n) {
        TallyClient::new(rt, object_id(n)).count_note(&note).await
    } else {
        SpotTallyClient::new(rt, object_id(n))
            .count_note(&note)
            .await
    }
}

async fn report(rt: &zlink::Handle, n: usize) -> zlink::Result<Tallied> {
    if is_actor(n) {
        TallyClient::new(rt, object_id(n)).report(&Report).await
    } else {
        SpotTallyClient::new(rt, object_id(n)).report(&Report).await
    }
}

/// What one sender saw: per object, the messages that completed `Ok`, and the errors.
#[derive(Default)]
struct Sent {
    ok: HashMap<usize, u64>,
    requests: u64,
    sends: u64,
    errors: Vec<String>,
}

/// Calls every object in turn until told to stop: each pass one-ways to some and
/// requests to the others, numbered per object.
async fn sender(rt: zlink::Handle, id: u8, stop: Arc<AtomicBool>) -> Sent {
    let mut sent = Sent::default();
    let mut seq = [0u64; OBJECTS];
    let mut pass: usize = 0;
    while !stop.load(Ordering::Relaxed) {
        pass += 1;
        for (n, seq) in seq.iter_mut().enumerate() {
            *seq += 1;
            let outcome = if (n + pass + usize::from(id)).is_multiple_of(2) {
                sent.sends += 1;
                note(&rt, n, id, *seq).await
            } else {
                sent.requests += 1;
                count(&rt, n, id, *seq).await
            };
            match outcome {
                Ok(()) => *sent.ok.entry(n).or_insert(0) += 1,
                Err(e) => sent.errors.push(format!("{} #{seq}: {e}", object_id(n))),
            }
        }
    }
    // A request from this node after everything it sent: one origin to one target is
    // FIFO, so once it is answered every earlier one-way of this sender has run.
    for n in 0..OBJECTS {
        if let Err(e) = report(&rt, n).await {
            sent.errors
                .push(format!("{} final report: {e}", object_id(n)));
        }
    }
    sent
}

/// Where object `n` runs now.
async fn owner_of(rt: &zlink::Handle, n: usize) -> Option<String> {
    let id = object_id(n);
    if is_actor(n) {
        rt.actors().find(&id).await.ok().flatten().map(|at| at.rid)
    } else {
        rt.spots().find(&id).await.ok().flatten().map(|at| at.rid)
    }
}

/// Moves random objects to another node, back to back, until told to stop.
async fn relocator(
    nodes: Vec<zlink::Handle>,
    stop: Arc<AtomicBool>,
    salt: usize,
    moves: Arc<AtomicU64>,
) {
    let mut n = salt;
    while !stop.load(Ordering::Relaxed) {
        n = n.wrapping_mul(31).wrapping_add(17);
        let object = n % OBJECTS;
        let Some(at) = owner_of(&nodes[0], object).await else {
            continue;
        };
        let Some(owner) = nodes.iter().find(|rt| rt.rid() == at) else {
            continue;
        };
        let others: Vec<&zlink::Handle> = nodes.iter().filter(|rt| rt.rid() != at).collect();
        let to = others[(n / OBJECTS) % others.len()].rid().to_string();
        let id = object_id(object);
        // Racing another relocator or a move already under way is fine: it is refused.
        let moved = if is_actor(object) {
            owner.actors().relocate(&id, Some(&to)).await.is_ok()
        } else {
            owner.spots().relocate(&id, Some(&to)).await.is_ok()
        };
        if moved {
            moves.fetch_add(1, Ordering::Relaxed);
        }
        tokio::time::sleep(MOVE_EVERY).await;
    }
}

/// Owner lease timings with room for a loaded 2-core machine: renew 500 ms, TTL 5 s,
/// renew timeout 1 s, fencing margin 2 s. Under this load a renewal can be late by more
/// than the test timings' 1 s of slack, and a node past its admission deadline rightly
/// refuses its objects' work; that is not what this test is about.
fn load_lease() -> zlink::store::OwnerLeaseSettings {
    zlink::store::OwnerLeaseSettings {
        renew_interval: Duration::from_millis(500),
        ttl: Duration::from_secs(5),
        renew_timeout: Duration::from_secs(1),
        fencing_margin: Duration::from_secs(2),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relocation_under_load_loses_and_duplicates_nothing() {
    let redis = RedisServer::start().expect("redis-server");
    let store = redis_store(&redis);
    let relocation_store = redis_relocation_store(&redis);
    let mut nodes = Vec::new();
    for rid in ["a", "b", "c"] {
        let tally = Tally::actor_type(|_| Tally::default()).expect("tally type");
        let spot_tally = SpotTally::spot_type(|_| SpotTally::default()).expect("spot type");
        let builder = discovered_node(rid, &store, load_lease())
            .relocation_store(relocation_store.clone())
            .actor_type(tally)
            .spot_type(spot_tally);
        nodes.push(start(builder).await);
    }
    for rt in &nodes {
        wait_until(WAIT, "every node sees the others' Entry Spots", || async {
            peer_rids(rt).len() == 2
                && rt.discovery().status().is_some_and(|s| {
                    s.members.iter().filter(|m| m.entry_spot.is_some()).count() == 2
                })
        })
        .await;
    }
    for n in 0..OBJECTS {
        let rt = &nodes[n % 3];
        if is_actor(n) {
            rt.actors().create(&object_id(n), "tally").await.unwrap();
        } else {
            rt.spots()
                .get_or_create(&object_id(n), "tally-spot", "")
                .await
                .unwrap();
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let moves = Arc::new(AtomicU64::new(0));
    let senders: Vec<_> = (0..3 * SENDERS_PER_NODE)
        .map(|i| {
            let rt = nodes[usize::from(i % 3)].handle().clone();
            tokio::spawn(sender(rt, i + 1, stop.clone()))
        })
        .collect();
    let relocators: Vec<_> = (0..3)
        .map(|salt| {
            tokio::spawn(relocator(
                nodes.iter().map(|n| n.handle().clone()).collect(),
                stop.clone(),
                salt + 1,
                moves.clone(),
            ))
        })
        .collect();
    tokio::time::sleep(LOAD_FOR).await;
    stop.store(true, Ordering::Relaxed);
    for r in relocators {
        r.await.unwrap();
    }
    let mut sent = Vec::new();
    for s in senders {
        sent.push(s.await.unwrap());
    }
    // What every object took, read after the load stopped.
    let mut tallies = Vec::new();
    for n in 0..OBJECTS {
        tallies.push(report(&nodes[2], n).await.unwrap());
    }
    let requests: u64 = sent.iter().map(|s| s.requests).sum();
    let sends: u64 = sent.iter().map(|s| s.sends).sum();
    let errors: Vec<&String> = sent.iter().flat_map(|s| &s.errors).collect();
    let accepted: u64 = sent.iter().flat_map(|s| s.ok.values()).sum();
    let taken: u64 = tallies.iter().map(|t| t.total).sum();
    let out_of_order: u64 = tallies.iter().map(|t| t.out_of_order).sum();
    let lost: u64 = nodes
        .iter()
        .map(|rt| rt.status().lost_one_ways.total())
        .sum();
    let relayed: u64 = nodes
        .iter()
        .map(|rt| rt.status().relayed_by_message_follow)
        .sum();
    let moved = moves.load(Ordering::Relaxed);
    let lost_messages = accepted.saturating_sub(taken);
    println!(
        "relocation under load: {moved} moves, {requests} requests, {sends} one-ways, \
         {accepted} accepted, {taken} taken, {lost_messages} lost, {out_of_order} out of order, \
         {} errors, {lost} one-ways counted lost, {relayed} relayed, in {LOAD_FOR:?}",
        errors.len(),
    );
    for e in errors.iter().take(10) {
        println!("  error: {e}");
    }
    for rt in &nodes {
        println!("  {} lost {:?}", rt.rid(), rt.status().lost_one_ways);
    }
    for (n, tally) in tallies.iter().enumerate() {
        assert_eq!(
            tally.out_of_order,
            0,
            "{}: a message was duplicated or reordered: (sender, last, then) {:?}",
            object_id(n),
            tally.first_out_of_order
        );
    }
    for (n, tally) in tallies.iter().enumerate() {
        for (i, s) in sent.iter().enumerate() {
            let ok = s.ok.get(&n).copied().unwrap_or(0);
            let took = tally.per_sender.get(&(i as u8 + 1)).copied().unwrap_or(0);
            assert_eq!(
                took,
                ok,
                "{}: sender {} had {ok} accepted, the object took {took}",
                object_id(n),
                i + 1
            );
        }
    }
    assert_eq!(taken, accepted, "every accepted message ran exactly once");
    // Every sender calls each object several times per move of it: no call may fail,
    // not even the seed's 8-hop Unavailable, and no accepted one-way may be lost.
    assert!(
        errors.is_empty(),
        "{} failed calls: {:?}",
        errors.len(),
        &errors[..errors.len().min(10)]
    );
    assert_eq!(lost, 0, "one-ways were counted lost");
    assert!(
        moved >= 20 * LOAD_FOR.as_secs(),
        "the objects moved under load ({moved} moves)"
    );
    stop_nodes(nodes).await;
}

async fn stop_nodes(nodes: Vec<Runtime>) {
    stop(nodes).await;
}
