//! Relocation under load (seed 000 §2.5, seed 002 §5): three nodes over real TCP and a
//! real `redis-server` (both the Location Store and the Relocation Store), 100 `preserve`
//! Actors moved among them continuously for 30 s while four senders on two of the nodes
//! send sequence-numbered requests and one-ways. Nothing may be lost, duplicated or
//! reordered.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::object::{Actor, ActorContext, RelocationState};
use zlink::Runtime;
use zlink_testkit::{wait_until, RedisServer};
use zlink_tests::*;

const ACTORS: usize = 100;
const SENDERS: u8 = 4;
const LOAD_FOR: Duration = Duration::from_secs(30);

/// A request: sender `sender`'s message number `seq` to this Actor.
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

fn actor_id(n: usize) -> String {
    format!("tally-{n}")
}

/// What one sender saw: per Actor, the messages that completed `Ok`, and the errors.
#[derive(Default)]
struct Sent {
    ok: HashMap<usize, u64>,
    requests: u64,
    sends: u64,
    errors: Vec<String>,
}

async fn sender(rt: Runtime, id: u8, stop: Arc<AtomicBool>) -> Sent {
    let mut sent = Sent::default();
    let mut seq: HashMap<usize, u64> = HashMap::new();
    let mut n: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let actor = (n as usize * 7 + id as usize * 13) % ACTORS;
        let next = seq.entry(actor).or_insert(0);
        *next += 1;
        let client = TallyClient::new(&rt, actor_id(actor));
        let outcome = if n.is_multiple_of(3) {
            sent.sends += 1;
            client
                .count_note(&CountNote {
                    sender: id,
                    seq: *next,
                })
                .await
        } else {
            sent.requests += 1;
            client
                .count(&Count {
                    sender: id,
                    seq: *next,
                })
                .await
                .map(|_| ())
        };
        match outcome {
            Ok(()) => *sent.ok.entry(actor).or_insert(0) += 1,
            Err(e) => sent
                .errors
                .push(format!("{} #{}: {e}", actor_id(actor), *next)),
        }
    }
    // A request from this node after everything it sent: one origin to one target is
    // FIFO, so once it is answered every earlier one-way of this sender has run.
    for actor in seq.keys() {
        let _ = TallyClient::new(&rt, actor_id(*actor))
            .report(&Report)
            .await;
    }
    sent
}

/// Moves random Actors among the nodes until told to stop; returns how many moved.
async fn relocator(nodes: Vec<Runtime>, stop: Arc<AtomicBool>, salt: usize, moves: Arc<AtomicU64>) {
    let mut n = salt;
    while !stop.load(Ordering::Relaxed) {
        n = n.wrapping_mul(31).wrapping_add(17);
        let id = actor_id(n % ACTORS);
        let Ok(Some(at)) = nodes[0].actors().find(&id).await else {
            continue;
        };
        let Some(owner) = nodes.iter().find(|rt| rt.rid() == at.rid) else {
            continue;
        };
        let others: Vec<&Runtime> = nodes.iter().filter(|rt| rt.rid() != at.rid).collect();
        let to = others[n % others.len()].rid().to_string();
        // Racing another relocator or a move already under way is fine: it is refused.
        if owner.actors().relocate(&id, Some(&to)).await.is_ok() {
            moves.fetch_add(1, Ordering::Relaxed);
        }
        // About three moves per Actor per second: a sender's cached route falls a few
        // moves behind at most, within Message Follow's 8 hops.
        tokio::time::sleep(Duration::from_millis(10)).await;
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
        let builder = discovered_node(rid, &store, load_lease())
            .relocation_store(relocation_store.clone())
            .actor_type(tally);
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
    for n in 0..ACTORS {
        nodes[n % 3]
            .actors()
            .create(&actor_id(n), "tally")
            .await
            .unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let moves = Arc::new(AtomicU64::new(0));
    let senders: Vec<_> = (0..SENDERS)
        .map(|id| {
            let rt = nodes[usize::from(id % 2)].clone();
            tokio::spawn(sender(rt, id + 1, stop.clone()))
        })
        .collect();
    let relocators: Vec<_> = (0..3)
        .map(|salt| {
            tokio::spawn(relocator(
                nodes.clone(),
                stop.clone(),
                salt + 1,
                moves.clone(),
            ))
        })
        .collect();
    tokio::time::sleep(LOAD_FOR).await;
    stop.store(true, Ordering::Relaxed);
    let mut sent = Vec::new();
    for s in senders {
        sent.push(s.await.unwrap());
    }
    for r in relocators {
        r.await.unwrap();
    }
    // What every Actor took, read after the load stopped.
    let mut tallies = Vec::new();
    for n in 0..ACTORS {
        let tally = TallyClient::new(&nodes[2], actor_id(n))
            .report(&Report)
            .await
            .unwrap();
        tallies.push(tally);
    }
    let requests: u64 = sent.iter().map(|s| s.requests).sum();
    let sends: u64 = sent.iter().map(|s| s.sends).sum();
    let errors: Vec<&String> = sent.iter().flat_map(|s| &s.errors).collect();
    let accepted: u64 = sent.iter().flat_map(|s| s.ok.values()).sum();
    let taken: u64 = tallies.iter().map(|t| t.total).sum();
    let out_of_order: u64 = tallies.iter().map(|t| t.out_of_order).sum();
    println!(
        "relocation under load: {requests} requests, {sends} one-ways, {accepted} accepted, \
         {taken} taken, {} errors, {out_of_order} out of order, {} moves in {LOAD_FOR:?}",
        errors.len(),
        moves.load(Ordering::Relaxed)
    );
    let mut kinds: HashMap<String, usize> = HashMap::new();
    for e in &errors {
        let kind = e
            .split_once(": ")
            .map(|(_, rest)| rest.replace(|c: char| c.is_ascii_digit(), ""))
            .unwrap_or_default();
        *kinds.entry(kind).or_insert(0) += 1;
    }
    println!("errors by kind: {kinds:?}");
    assert_eq!(out_of_order, 0, "a message was duplicated or reordered");
    for (n, tally) in tallies.iter().enumerate() {
        for (i, s) in sent.iter().enumerate() {
            let ok = s.ok.get(&n).copied().unwrap_or(0);
            let took = tally.per_sender.get(&(i as u8 + 1)).copied().unwrap_or(0);
            assert_eq!(
                took,
                ok,
                "{}: sender {} had {ok} accepted, the Actor took {took}",
                actor_id(n),
                i + 1
            );
        }
    }
    assert_eq!(taken, accepted, "every accepted message ran exactly once");
    // A failed call is a terminal result the caller saw, and it ran nowhere (the counts
    // above). The only failure a move may cause is the seed's: a sender whose cached
    // route fell more than 8 moves behind gets Unavailable, and its next call reads the
    // owner again.
    let unexpected: Vec<&&String> = errors
        .iter()
        .filter(|e| !e.contains("moved more than 8 times within the follow window"))
        .collect();
    assert!(
        unexpected.is_empty(),
        "failed calls: {:?}",
        &unexpected[..unexpected.len().min(10)]
    );
    assert!(
        moves.load(Ordering::Relaxed) >= 100,
        "the Actors moved under load"
    );
    stop_nodes(nodes).await;
}

async fn stop_nodes(nodes: Vec<Runtime>) {
    stop(nodes).await;
}
