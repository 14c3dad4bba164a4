//! A SpotWide User Spot relocates with every member it has at seal time, as one unit
//! (seed 000 §2.5; digest §7.1, §7.4), over real TCP on 127.0.0.1 and a real
//! `redis-server`: state, queues and the shared gate arrive together; a participant the
//! target cannot take cancels the whole unit before anything is handed over.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::object::{
    Actor, ActorContext, ActorRef, ClosingReason, JoinDecision, RelocationState, Spot, SpotContext,
};
use zlink::{Bytes, ErrorKind};
use zlink_testkit::wait_until;
use zlink_tests::relocating::{mesh_custom, Mesh};
use zlink_tests::*;

/// One-way to a table or a guest: the next number in its transcript.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Say(pub u64);

/// One-way to a guest: join this table.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Sit(pub String);

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Transcript)]
pub struct Read;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Transcript {
    pub heard: Vec<u64>,
    pub by: String,
    pub spot: Option<String>,
}

/// Holds the turn a while: whether another guest's `linger` ran meanwhile.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Overlapped)]
pub struct Linger;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Overlapped(pub bool);

/// What the tables of every node report: membership callbacks and last turns.
type Events = Arc<Mutex<Vec<String>>>;

#[derive(Default, Serialize, Deserialize)]
struct Heard(Vec<u64>);

impl Heard {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        serde_json::to_vec(&self.0).map_err(|e| zlink::Error::InvalidArgument(e.to_string()))
    }

    fn restore(state: &[u8]) -> zlink::Result<Self> {
        serde_json::from_slice(state)
            .map(Heard)
            .map_err(|e| zlink::Error::InvalidArgument(e.to_string()))
    }
}

/// A table and its guests run one turn at a time (`SpotWide`, the default), and move
/// together: the table's and each guest's state is preserved.
pub struct Table {
    node: String,
    heard: Heard,
    events: Events,
}

impl RelocationState for Table {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        self.heard.capture()
    }

    fn restore(&mut self, state: &[u8]) -> zlink::Result<()> {
        self.heard = Heard::restore(state)?;
        Ok(())
    }
}

#[zlink::spot(type = "table", relocation = preserve, actors = Guest)]
impl Table {
    #[handler]
    async fn say(&mut self, say: Say, _ctx: &SpotContext) -> zlink::Result<()> {
        self.heard.0.push(say.0);
        Ok(())
    }

    #[handler]
    async fn read(&mut self, _read: Read, ctx: &SpotContext) -> zlink::Result<Transcript> {
        Ok(Transcript {
            heard: self.heard.0.clone(),
            by: self.node.clone(),
            spot: Some(ctx.id().to_string()),
        })
    }

    #[on_actor_join]
    async fn admit(
        &mut self,
        actor: &ActorRef,
        _request: Bytes,
        _ctx: &SpotContext,
    ) -> JoinDecision {
        self.events
            .lock()
            .unwrap()
            .push(format!("join {}", actor.id));
        JoinDecision::Accept(Bytes::new())
    }

    #[on_leave_actor]
    async fn left(&mut self, actor: &ActorRef, _ctx: &SpotContext) {
        self.events
            .lock()
            .unwrap()
            .push(format!("left {}", actor.id));
    }
}

#[zlink::async_trait]
impl Spot for Table {
    async fn on_closing(&mut self, _ctx: &SpotContext, reason: ClosingReason) {
        let line = format!("closing on {} {reason:?}", self.node);
        self.events.lock().unwrap().push(line);
    }
}

pub struct Guest {
    node: String,
    heard: Heard,
    /// How many `linger` turns run now on this node.
    inside: Arc<AtomicUsize>,
}

impl RelocationState for Guest {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        self.heard.capture()
    }

    fn restore(&mut self, state: &[u8]) -> zlink::Result<()> {
        self.heard = Heard::restore(state)?;
        Ok(())
    }
}

#[zlink::actor(type = "guest", relocation = preserve)]
impl Guest {
    #[handler]
    async fn sit(&mut self, sit: Sit, ctx: &ActorContext) -> zlink::Result<()> {
        ctx.join_spot(&sit.0, Bytes::new())
    }

    #[handler]
    async fn say(&mut self, say: Say, _ctx: &ActorContext) -> zlink::Result<()> {
        self.heard.0.push(say.0);
        Ok(())
    }

    #[handler]
    async fn read(&mut self, _read: Read, ctx: &ActorContext) -> zlink::Result<Transcript> {
        Ok(Transcript {
            heard: self.heard.0.clone(),
            by: self.node.clone(),
            spot: ctx.spot().map(|s| s.to_string()),
        })
    }

    #[handler]
    async fn linger(&mut self, _linger: Linger, _ctx: &ActorContext) -> zlink::Result<Overlapped> {
        let others = self.inside.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(150)).await;
        let overlapped = others > 0 || self.inside.load(Ordering::SeqCst) > 1;
        self.inside.fetch_sub(1, Ordering::SeqCst);
        Ok(Overlapped(overlapped))
    }
}

impl Actor for Guest {}

/// A Spot whose members may not move.
pub struct Plinth;

#[zlink::spot(type = "plinth", relocation = recreate, actors = Statue)]
impl Plinth {}

impl Spot for Plinth {}

/// An Actor that never moves.
pub struct Statue;

#[zlink::actor(type = "statue", relocation = disable)]
impl Statue {
    #[handler]
    async fn sit(&mut self, sit: Sit, ctx: &ActorContext) -> zlink::Result<()> {
        ctx.join_spot(&sit.0, Bytes::new())
    }

    #[handler]
    async fn read(&mut self, _read: Read, ctx: &ActorContext) -> zlink::Result<Transcript> {
        Ok(Transcript {
            heard: Vec::new(),
            by: String::new(),
            spot: ctx.spot().map(|s| s.to_string()),
        })
    }
}

impl Actor for Statue {}

/// `builder` serving tables and (if `guests`) at most `max_guests` guests (0: no limit),
/// each reporting `rid` as its node.
fn dining_node(
    rid: &str,
    builder: zlink::RuntimeBuilder,
    guests: bool,
    max_guests: u32,
    events: &Events,
) -> zlink::RuntimeBuilder {
    let (node, events) = (rid.to_string(), events.clone());
    let tables = Table::spot_type(move |_| Table {
        node: node.clone(),
        heard: Heard::default(),
        events: events.clone(),
    })
    .unwrap();
    let builder = builder
        .spot_type(tables)
        .spot_type(Plinth::spot_type(|_| Plinth).unwrap())
        .actor_type(Statue::actor_type(|_| Statue).unwrap());
    if !guests {
        return builder;
    }
    let (node, inside) = (rid.to_string(), Arc::new(AtomicUsize::new(0)));
    let guest_type = Guest::actor_type(move |_| Guest {
        node: node.clone(),
        heard: Heard::default(),
        inside: inside.clone(),
    })
    .unwrap();
    builder.actor_type(guest_type.max_actors(max_guests))
}

/// Nodes `a` (where tables and guests start) and `b`, and a client; node `b` hosts at
/// most `b_guests` guests (0: no limit), or none at all when `b_serves_guests` is false.
async fn dining(b_serves_guests: bool, b_guests: u32, events: &Events) -> Mesh {
    let events = events.clone();
    mesh_custom(&["a", "b"], 0, move |rid, _store, builder| match rid {
        "b" => dining_node(rid, builder, b_serves_guests, b_guests, &events),
        _ => dining_node(rid, builder, true, 0, &events),
    })
    .await
}

const GUESTS: [&str; 3] = ["g1", "g2", "g3"];

/// Table `t1` on node `a`, with the three guests seated, each having heard `0..10`.
async fn seat_everyone(a: &zlink::Handle, client: &zlink::Handle) {
    let table = a.spots().get_or_create("t1", "table", "").await.unwrap();
    assert!(
        matches!(&table, zlink::object::SpotCreation::Created(at, _) if at.rid == "a"),
        "{table:?}"
    );
    for guest in GUESTS {
        assert_eq!(a.actors().create(guest, "guest").await.unwrap().rid, "a");
        GuestClient::new(client, guest)
            .sit(Sit("t1".into()))
            .await
            .unwrap();
        wait_until(WAIT, "the guest is seated", || async {
            let read = GuestClient::new(client, guest).read(&Read).await.unwrap();
            read.spot.as_deref() == Some("t1")
        })
        .await;
    }
    say_to_everyone(client, 0..10).await;
}

async fn say_to_everyone(client: &zlink::Handle, numbers: std::ops::Range<u64>) {
    let table = TableClient::new(client, "t1");
    for n in numbers {
        table.say(Say(n)).await.unwrap();
        for guest in GUESTS {
            GuestClient::new(client, guest).say(Say(n)).await.unwrap();
        }
    }
}

/// Every participant's transcript: the table's first.
async fn transcripts(client: &zlink::Handle) -> Vec<Transcript> {
    let mut all = vec![TableClient::new(client, "t1").read(&Read).await.unwrap()];
    for guest in GUESTS {
        all.push(GuestClient::new(client, guest).read(&Read).await.unwrap());
    }
    all
}

async fn owners(rt: &zlink::Handle) -> Vec<String> {
    let mut owners = vec![rt.spots().find("t1").await.unwrap().unwrap().rid];
    for guest in GUESTS {
        owners.push(rt.actors().find(guest).await.unwrap().unwrap().rid);
    }
    owners
}

#[tokio::test]
async fn a_spot_wide_spot_moves_with_every_member_as_one_unit_keeping_state_queues_and_its_gate(
) -> zlink::Result<()> {
    let events = Events::default();
    let m = dining(true, 0, &events).await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    seat_everyone(a, client).await;
    let generations = (
        a.spots().find("t1").await.unwrap().unwrap().generation,
        a.actors().find("g1").await.unwrap().unwrap().generation,
    );
    events.lock().unwrap().clear();
    // Senders keep talking to the table and every guest while the unit moves.
    let talking = tokio::spawn({
        let client = client.handle().clone();
        async move { say_to_everyone(&client, 10..60).await }
    });
    tokio::time::sleep(Duration::from_millis(5)).await;
    // The table and every guest seated at it now move to b, as one unit.
    let moved = a.spots().relocate("t1", Some("b")).await?;
    assert_eq!(moved.rid, "b");
    talking.await.unwrap();

    assert_eq!(
        owners(client).await,
        ["b", "b", "b", "b"],
        "the Spot and every member"
    );
    assert_eq!(
        (
            a.spots().find("t1").await.unwrap().unwrap().generation,
            a.actors().find("g1").await.unwrap().unwrap().generation,
        ),
        generations,
        "the same incarnations"
    );
    let expected: Vec<u64> = (0..60).collect();
    for transcript in transcripts(client).await {
        assert_eq!(transcript.by, "b");
        assert_eq!(transcript.spot.as_deref(), Some("t1"), "still seated at t1");
        assert_eq!(
            transcript.heard, expected,
            "the state moved, and every message ran once, in order"
        );
    }
    // On b they share the table's gate again: two guests' turns never overlap.
    let (g1, g2) = (
        GuestClient::new(client, "g1"),
        GuestClient::new(client, "g2"),
    );
    let (one, two) = tokio::join!(g1.linger(&Linger), g2.linger(&Linger));
    assert!(
        !one.unwrap().0 && !two.unwrap().0,
        "one turn at a time behind the moved gate"
    );
    wait_until(
        WAIT,
        "the instance left behind heard its last turn",
        || async {
            events
                .lock()
                .unwrap()
                .iter()
                .any(|e| e.starts_with("closing on a"))
        },
    )
    .await;
    assert_eq!(
        *events.lock().unwrap(),
        ["closing on a RelocationOut"],
        "no Join or leave callbacks: the members moved with their Spot"
    );
    stop(m.nodes).await;
    Ok(())
}

#[tokio::test]
async fn a_target_that_serves_no_member_type_refuses_the_unit_before_anything_stops() {
    let events = Events::default();
    let m = dining(false, 0, &events).await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    seat_everyone(a, client).await;
    let refused = a.spots().relocate("t1", Some("b")).await.unwrap_err();
    assert!(refused.is(ErrorKind::NotFound), "{refused}");
    assert_eq!(owners(client).await, ["a", "a", "a", "a"]);
    say_to_everyone(client, 10..12).await;
    for transcript in transcripts(client).await {
        assert_eq!((transcript.by.as_str(), transcript.heard.len()), ("a", 12));
    }
    stop(m.nodes).await;
}

#[tokio::test]
async fn a_member_the_target_cannot_host_cancels_the_whole_unit_and_its_queues_run_on_here() {
    let events = Events::default();
    // b takes one guest: the unit of three needs three.
    let m = dining(true, 1, &events).await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    seat_everyone(a, client).await;
    let talking = tokio::spawn({
        let client = client.handle().clone();
        async move { say_to_everyone(&client, 10..40).await }
    });
    tokio::time::sleep(Duration::from_millis(5)).await;
    let cancelled = a.spots().relocate("t1", Some("b")).await.unwrap_err();
    assert!(cancelled.is(ErrorKind::CapacityExceeded), "{cancelled}");
    talking.await.unwrap();
    assert_eq!(owners(client).await, ["a", "a", "a", "a"], "nothing moved");
    let expected: Vec<u64> = (0..40).collect();
    for transcript in transcripts(client).await {
        assert_eq!(transcript.by, "a");
        assert_eq!(transcript.spot.as_deref(), Some("t1"));
        assert_eq!(
            transcript.heard, expected,
            "what waited during the attempt ran here, in order"
        );
    }
    // The Spot takes Joins again, and nothing arrived on b.
    a.actors().create("g4", "guest").await.unwrap();
    GuestClient::new(client, "g4")
        .sit(Sit("t1".into()))
        .await
        .unwrap();
    wait_until(WAIT, "the Spot admits again", || async {
        events.lock().unwrap().iter().any(|e| e == "join g4")
    })
    .await;
    assert_eq!(m.nodes[1].status().actors_owned, 0, "no guest stayed on b");
    stop(m.nodes).await;
}

#[tokio::test]
async fn relocate_all_moves_a_spot_wide_spot_together_with_its_members() {
    let events = Events::default();
    // a alone first: the table and its guests start there.
    let m = mesh_custom(&["a"], 0, |rid, _store, builder| {
        dining_node(rid, builder, true, 0, &events)
    })
    .await;
    let (a, client) = (&m.nodes[0], &m.nodes[1]);
    seat_everyone(a, client).await;
    let b = start(dining_node(
        "b",
        discovered_node("b", &m.store, quick_lease()),
        true,
        0,
        &events,
    ))
    .await;
    wait_until(
        WAIT,
        "a sees b's Entry Spot and is connected to b",
        || async {
            a.discovery().status().is_some_and(|s| {
                s.members
                    .iter()
                    .any(|m| m.rid == "b" && m.entry_spot.is_some())
            }) && peer_rids(a).iter().any(|p| p == "b")
        },
    )
    .await;
    let report = a.relocate_all().await.unwrap();
    assert!(report.is_complete(), "{report:?}");
    assert_eq!(
        report
            .moved_spots
            .iter()
            .map(|s| s.id.as_str())
            .collect::<Vec<_>>(),
        ["t1"]
    );
    let mut moved: Vec<_> = report.moved.iter().map(|a| a.id.to_string()).collect();
    moved.sort();
    assert_eq!(moved, GUESTS, "each member is reported where it runs now");
    assert!(report.moved.iter().all(|a| a.rid == "b"));
    assert_eq!(owners(client).await, ["b", "b", "b", "b"]);
    for transcript in transcripts(client).await {
        assert_eq!((transcript.by.as_str(), transcript.heard.len()), ("b", 10));
    }
    stop(m.nodes.into_iter().chain([b])).await;
}

#[tokio::test]
async fn a_member_that_may_not_move_keeps_its_spot_wide_spot_and_relocate_all_reports_both_blocked()
{
    let events = Events::default();
    let m = dining(true, 0, &events).await;
    let (a, client) = (&m.nodes[0], &m.nodes[2]);
    a.spots().get_or_create("p1", "plinth", "").await.unwrap();
    a.actors().create("s1", "statue").await.unwrap();
    StatueClient::new(client, "s1")
        .sit(Sit("p1".into()))
        .await
        .unwrap();
    wait_until(WAIT, "the statue stands on its plinth", || async {
        let read = StatueClient::new(client, "s1").read(&Read).await.unwrap();
        read.spot.as_deref() == Some("p1")
    })
    .await;
    let refused = a.spots().relocate("p1", Some("b")).await.unwrap_err();
    assert!(
        refused.is(ErrorKind::Rejected)
            && refused.to_string().contains("Actor s1 is of type statue"),
        "{refused}"
    );
    let report = a.relocate_all().await.unwrap();
    let mut blocked: Vec<_> = report
        .blocked
        .iter()
        .map(|b| (b.id.as_str(), b.reason))
        .collect();
    blocked.sort_by_key(|(id, _)| *id);
    use zlink::object::BlockedReason::{RelocationDisabled, SpotWithMembers};
    assert_eq!(
        blocked,
        [("p1", SpotWithMembers), ("s1", RelocationDisabled)]
    );
    assert!(report.failed.is_empty(), "{report:?}");
    assert_eq!(a.spots().find("p1").await.unwrap().unwrap().rid, "a");
    stop(m.nodes).await;
}

#[tokio::test]
async fn a_unit_moved_back_and_forth_under_load_loses_duplicates_and_reorders_nothing() {
    let events = Events::default();
    let m = dining(true, 0, &events).await;
    let (a, b, client) = (&m.nodes[0], &m.nodes[1], &m.nodes[2]);
    seat_everyone(a, client).await;
    let stop_sending = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // One sender per participant, numbering from 10 on: what each accepted, in order.
    let mut senders = Vec::new();
    for target in ["t1", "g1", "g2", "g3"] {
        let (client, stop) = (client.handle().clone(), stop_sending.clone());
        senders.push(tokio::spawn(async move {
            let mut accepted = Vec::new();
            let mut n = 10;
            while !stop.load(Ordering::Relaxed) {
                let sent = if target == "t1" {
                    TableClient::new(&client, target).say(Say(n)).await
                } else {
                    GuestClient::new(&client, target).say(Say(n)).await
                };
                if sent.is_ok() {
                    accepted.push(n);
                }
                n += 1;
                if n % 16 == 0 {
                    tokio::task::yield_now().await;
                }
            }
            accepted
        }));
    }
    let mut moves = 0;
    let until = tokio::time::Instant::now() + Duration::from_secs(3);
    while tokio::time::Instant::now() < until {
        let (from, to) = if moves % 2 == 0 { (a, "b") } else { (b, "a") };
        from.spots().relocate("t1", Some(to)).await.unwrap();
        moves += 1;
    }
    stop_sending.store(true, Ordering::Relaxed);
    let mut sent = 0;
    let mut accepted_all = Vec::new();
    for sender in senders {
        let accepted = sender.await.unwrap();
        sent += accepted.len();
        accepted_all.push(accepted);
    }
    let expected_owner = if moves % 2 == 0 { "a" } else { "b" };
    assert_eq!(owners(client).await, [expected_owner; 4]);
    for (transcript, accepted) in transcripts(client).await.into_iter().zip(accepted_all) {
        let expected: Vec<u64> = (0..10).chain(accepted).collect();
        assert_eq!(transcript.by, expected_owner);
        assert_eq!(transcript.spot.as_deref(), Some("t1"));
        assert!(
            transcript.heard == expected,
            "every accepted message ran once, in order: {} heard, {} expected",
            transcript.heard.len(),
            expected.len()
        );
    }
    println!("{moves} unit moves of 4 objects, {sent} one-way messages accepted, none lost, duplicated or reordered");
    assert!(moves >= 10, "only {moves} moves");
    stop(m.nodes).await;
}
