//! Hostile peers against the object commands, over real TCP on 127.0.0.1: an admitted raw
//! DEALER sends malformed creations, closes and destroys, Spot and Actor messages without
//! or with forged fences, and a creation flood. Every one gets a terminal answer, and the node keeps serving.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use zlink::object::{Spot, SpotContext};
use zlink::wire::{
    Admission, CallHead, CallMessage, Command, ControlHeader, Envelope, Metadata, ReplyOutcome,
    RouteFence, WireName, PROTOCOL_MAJOR,
};
use zlink::ErrorKind;
use zlink_testkit::RawZmtp;
use zlink_tests::*;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Pong)]
pub struct Ping;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Pong;

pub struct Target;

#[zlink::spot(type = "target", relocation = disable)]
impl Target {
    #[handler]
    async fn ping(&mut self, _ping: Ping, _ctx: &SpotContext) -> zlink::Result<Pong> {
        Ok(Pong)
    }
}

impl Spot for Target {}

async fn object_server() -> zlink::Runtime {
    start(
        node("a")
            .location_store(<dyn zlink::store::LocationStore>::in_memory())
            .spot_type(Target::spot_type(|_| Target).unwrap()),
    )
    .await
}

async fn admitted_raw(endpoint: &str) -> RawZmtp {
    let mut raw = RawZmtp::dealer(endpoint).await.expect("zmtp handshake");
    let hello = Envelope::control(
        Command::Hello,
        ControlHeader {
            admission: Some(Admission {
                mesh_name: MESH.into(),
                rid: "raw".into(),
                generation: 7,
                revision: 1,
                protocol: PROTOCOL_MAJOR,
                endpoint: String::new(),
                channels: vec![],
                max_message: None,
            }),
            ..ControlHeader::default()
        },
    )
    .encode();
    raw.send(&slices(&hello)).await.expect("hello");
    let admit = raw.recv().await.expect("admit");
    let frames: Vec<Bytes> = admit.into_iter().map(Bytes::from).collect();
    assert_eq!(Envelope::decode(&frames).unwrap().command(), Command::Admit);
    raw
}

fn slices(frames: &[Bytes]) -> Vec<&[u8]> {
    frames.iter().map(|f| f.as_ref()).collect()
}

fn call(
    command: Command,
    correlation: u64,
    target: &str,
    packet: &str,
    fence: Option<RouteFence>,
    payload: Bytes,
) -> Vec<Bytes> {
    Envelope::Call(CallMessage {
        command,
        head: CallHead {
            correlation,
            operation: 1,
            deadline_ms: 5_000,
            hops: 0,
            target: WireName::from_text(target),
            packet: WireName::from_text(packet),
            fence,
            session: None,
            topic: None,
            push: None,
        },
        metadata: Metadata::new(),
        payload,
    })
    .encode()
}

/// The next reply's correlation and error kind (`None` for success).
async fn reply(raw: &mut RawZmtp) -> (u64, Option<u8>) {
    loop {
        let frames: Vec<Bytes> = raw
            .recv()
            .await
            .expect("a reply")
            .into_iter()
            .map(Bytes::from)
            .collect();
        if let Ok(Envelope::Reply {
            correlation,
            outcome,
            ..
        }) = Envelope::decode(&frames)
        {
            return match outcome {
                ReplyOutcome::Ok(_) => (correlation, None),
                ReplyOutcome::Failed { kind, .. } => (correlation, Some(kind)),
            };
        }
        // Liveness probes and other control records are not replies: skip them.
    }
}

/// Sends each case's frames on `raw` in turn; its reply fails with its kind (`None`: succeeds).
async fn assert_each_answered<K>(raw: &mut RawZmtp, cases: Vec<(Vec<Bytes>, K)>)
where
    K: Into<Option<ErrorKind>> + Copy + std::fmt::Debug,
{
    for (frames, kind) in cases {
        raw.send(&slices(&frames)).await.expect("sent");
        let (correlation, failed) = reply(raw).await;
        let expected: Option<ErrorKind> = kind.into();
        assert_eq!(
            failed,
            expected.map(ErrorKind::code),
            "correlation {correlation}: {kind:?}"
        );
    }
}

/// Checks that node `a` still creates and serves target Spot `id` for a well-behaved caller.
async fn still_serves(a: &zlink::Handle, id: &str) {
    a.spots().get_or_create(id, "target", "").await.unwrap();
    a.spots().request(id, &Ping).await.unwrap();
}

/// A relocation command (no fence, packet `zlink.relocation`) as a peer writes it.
fn relocation_call(command: Command, correlation: u64, target: &str, payload: Bytes) -> Vec<Bytes> {
    call(
        command,
        correlation,
        target,
        "zlink.relocation",
        None,
        payload,
    )
}

/// A well-formed creation record, written out: the CBOR map
/// `{"request": h'', "must_be_new": false}`.
fn create_request() -> Bytes {
    let mut cbor = vec![0xA2, 0x67];
    cbor.extend_from_slice(b"request");
    cbor.extend_from_slice(&[0x40, 0x6B]);
    cbor.extend_from_slice(b"must_be_new");
    cbor.push(0xF4);
    Bytes::from(cbor)
}

const FENCE: Option<RouteFence> = Some(RouteFence {
    object_generation: 1,
    owner_generation: 1,
    lease_generation: 1,
});

#[tokio::test]
async fn malformed_object_commands_get_an_error_reply_and_the_node_keeps_serving() {
    let a = object_server().await;
    let mut raw = admitted_raw(&a.endpoint()).await;
    let cases: Vec<(Vec<Bytes>, ErrorKind)> = vec![
        // A creation whose request record is not CBOR.
        (
            call(
                Command::SpotCreate,
                1,
                "s1",
                "target",
                None,
                Bytes::from_static(b"\xff\xfe"),
            ),
            ErrorKind::ProtocolError,
        ),
        // A creation of a reserved Entry Spot ID.
        (
            call(
                Command::SpotCreate,
                2,
                "m-entry-0b7e2a57-2a4f-4c5e-9d3b-1f2e3d4c5b6a",
                "target",
                None,
                create_request(),
            ),
            ErrorKind::InvalidOperation,
        ),
        // A close whose generation is 3 bytes, not 8.
        (
            call(
                Command::SpotClose,
                3,
                "s1",
                "close",
                FENCE,
                Bytes::from_static(b"abc"),
            ),
            ErrorKind::ProtocolError,
        ),
        // A message for a Spot this node does not own, with a made-up fence.
        (
            call(
                Command::SpotRequest,
                4,
                "nobody",
                "Ping",
                FENCE,
                Bytes::new(),
            ),
            ErrorKind::Unavailable,
        ),
        // An Actor request without a route fence.
        (
            call(Command::ActorRequest, 5, "p", "Ping", None, Bytes::new()),
            ErrorKind::ProtocolError,
        ),
        // An Actor request with a forged fence for an Actor this node does not run.
        (
            call(Command::ActorRequest, 6, "p", "Ping", FENCE, Bytes::new()),
            ErrorKind::Unavailable,
        ),
        // An Actor creation whose record is not CBOR.
        (
            call(
                Command::ActorCreate,
                7,
                "p",
                "player",
                None,
                Bytes::from_static(b"\x00\xff"),
            ),
            ErrorKind::ProtocolError,
        ),
        // An Actor creation of a type this node does not serve.
        (
            call(
                Command::ActorCreate,
                8,
                "p",
                "player",
                None,
                create_request(),
            ),
            ErrorKind::NotFound,
        ),
        // A destroy of an Actor it does not run, with a made-up fence.
        (
            call(
                Command::ActorDestroy,
                9,
                "p",
                "close",
                FENCE,
                Bytes::from_static(&[0, 0, 0, 0, 0, 0, 0, 1]),
            ),
            ErrorKind::Unavailable,
        ),
    ];
    assert_each_answered(&mut raw, cases).await;
    // The node still creates and serves Spots for a well-behaved caller.
    still_serves(&a, "fine").await;
    a.shutdown().await;
}

#[tokio::test]
async fn a_flood_of_creations_is_answered_and_bounded() {
    let a = object_server().await;
    let mut raw = admitted_raw(&a.endpoint()).await;
    let request =
        zlink::wire::cbor_encode(&serde_json::json!({"request": [], "must_be_new": false}))
            .unwrap();
    let flood = 500u64;
    for i in 1..=flood {
        let frames = call(
            Command::SpotCreate,
            i,
            &format!("f{i}"),
            "target",
            None,
            request.clone(),
        );
        raw.send(&slices(&frames)).await.expect("sent");
    }
    let mut answered = 0;
    while answered < flood {
        reply(&mut raw).await;
        answered += 1;
    }
    // Whatever the per-connection cap refused or the creations did, every request got
    // exactly one answer, and a normal caller is still served.
    still_serves(&a, "after").await;
    a.shutdown().await;
}

/// The restore record as a peer could write it (the field names of the wire record).
#[derive(Serialize)]
struct RawRestore {
    kind: char,
    relocation_id: String,
    object: RawObject,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    members: Vec<RawMember>,
}

/// One moving object.
#[derive(Serialize)]
struct RawObject {
    stable_type: String,
    source_fence: RawFence,
    source_version: String,
    state: Option<()>,
    timers: Vec<RawTimer>,
}

/// A member Actor moving with its Spot.
#[derive(Serialize)]
struct RawMember {
    id: String,
    object: RawObject,
}

#[derive(Serialize)]
struct RawCutover {
    kind: char,
    relocation_id: String,
}

#[derive(Serialize)]
struct RawFence {
    object_generation: u64,
    owner_generation: u64,
    owner: String,
    lease_generation: u64,
}

#[derive(Serialize, Clone)]
struct RawTimer {
    name: String,
    period_ms: u64,
    policy: u8,
    catch_up: u32,
    next_in_ms: u64,
    last: u64,
    delivered: u64,
    skipped: u64,
}

fn cbor(value: &impl Serialize) -> Bytes {
    let mut out = Vec::new();
    ciborium::into_writer(value, &mut out).expect("cbor");
    Bytes::from(out)
}

fn raw_fence(generation: u64) -> RawFence {
    RawFence {
        object_generation: generation,
        owner_generation: generation,
        owner: "someone".into(),
        lease_generation: generation,
    }
}

/// The restore of Spot type `stable_type` moving with `members` (Actors of type `guest`).
fn unit_restore(kind: char, stable_type: &str, members: &[&str]) -> Bytes {
    cbor(&RawRestore {
        kind,
        relocation_id: "r-2".into(),
        object: raw_object(stable_type, 1, Vec::new()),
        members: members
            .iter()
            .map(|id| RawMember {
                id: id.to_string(),
                object: raw_object("guest", 1, Vec::new()),
            })
            .collect(),
    })
}

fn raw_object(stable_type: &str, generation: u64, timers: Vec<RawTimer>) -> RawObject {
    RawObject {
        stable_type: stable_type.into(),
        source_fence: raw_fence(generation),
        source_version: "1".into(),
        state: None,
        timers,
    }
}

fn restore(stable_type: &str, generation: u64, timers: usize) -> Bytes {
    let timer = RawTimer {
        name: "t".into(),
        period_ms: 10,
        policy: 0,
        catch_up: 0,
        next_in_ms: 1,
        last: 0,
        delivered: 0,
        skipped: 0,
    };
    cbor(&RawRestore {
        kind: 'a',
        relocation_id: "r-1".into(),
        object: raw_object(stable_type, generation, vec![timer; timers]),
        members: Vec::new(),
    })
}

#[tokio::test]
async fn hostile_relocation_commands_get_an_error_reply_and_the_node_keeps_serving() {
    let a = object_server().await;
    let mut raw = admitted_raw(&a.endpoint()).await;
    let cases: Vec<(Vec<Bytes>, Option<ErrorKind>)> = vec![
        // A restore whose record is not CBOR.
        (
            relocation_call(
                Command::RelocationRestore,
                1,
                "p",
                Bytes::from_static(b"\xff\x00"),
            ),
            Some(ErrorKind::ProtocolError),
        ),
        // A restore with zero generations.
        (
            relocation_call(Command::RelocationRestore, 2, "p", restore("player", 0, 0)),
            Some(ErrorKind::ProtocolError),
        ),
        // A restore carrying more timers than any object may have.
        (
            relocation_call(
                Command::RelocationRestore,
                3,
                "p",
                restore("player", 1, 2000),
            ),
            Some(ErrorKind::ProtocolError),
        ),
        // A restore of an Actor type this node does not serve: nothing is built.
        (
            relocation_call(Command::RelocationRestore, 4, "p", restore("player", 1, 1)),
            Some(ErrorKind::NotFound),
        ),
        // A cutover that is not CBOR, and one for a move that is not arriving here.
        (
            relocation_call(
                Command::RelocationCutover,
                5,
                "p",
                Bytes::from_static(b"\x01"),
            ),
            Some(ErrorKind::ProtocolError),
        ),
        (
            relocation_call(
                Command::RelocationCutover,
                6,
                "p",
                cbor(&RawCutover {
                    kind: 'a',
                    relocation_id: "r-9".into(),
                }),
            ),
            Some(ErrorKind::Unavailable),
        ),
        // Members that do not move with a Spot of their own, or twice in one unit.
        (
            relocation_call(
                Command::RelocationRestore,
                9,
                "p",
                unit_restore('a', "player", &["g1"]),
            ),
            Some(ErrorKind::ProtocolError),
        ),
        (
            relocation_call(
                Command::RelocationRestore,
                10,
                "t",
                unit_restore('s', "target", &["g1", "g1"]),
            ),
            Some(ErrorKind::ProtocolError),
        ),
        // A unit of a Spot type declared disable here: nothing is built.
        (
            relocation_call(
                Command::RelocationRestore,
                11,
                "t",
                unit_restore('s', "target", &["g1", "g2"]),
            ),
            Some(ErrorKind::Rejected),
        ),
        // A barrier is answered at once, and changes nothing.
        (
            relocation_call(Command::RelocationBarrier, 7, "p", Bytes::new()),
            None,
        ),
    ];
    assert_each_answered(&mut raw, cases).await;
    // Follow notices are one-way: garbage, and a forged one for a route the peer does not
    // own, are dropped without an answer; the next request is answered in order.
    raw.send(&slices(&relocation_call(
        Command::MessageFollow,
        0,
        "p",
        Bytes::from_static(b"\xff"),
    )))
    .await
    .expect("sent");
    raw.send(&slices(&relocation_call(
        Command::RelocationBarrier,
        8,
        "p",
        Bytes::new(),
    )))
    .await
    .expect("sent");
    assert_eq!(reply(&mut raw).await, (8, None));
    assert_eq!(a.status().actors_owned, 0, "nothing arrived");
    still_serves(&a, "fine").await;
    a.shutdown().await;
}

/// A packet name the framework reserves for itself.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(name = "zlink.follow-barrier")]
pub struct Impostor;

pub struct Squatter;

#[zlink::spot(type = "squatter", relocation = disable)]
impl Squatter {
    #[handler]
    async fn impostor(&mut self, _impostor: Impostor, _ctx: &SpotContext) -> zlink::Result<()> {
        Ok(())
    }
}

impl Spot for Squatter {}

#[test]
fn a_type_may_not_declare_a_packet_the_framework_reserves() {
    let error = Squatter::spot_type(|_| Squatter).unwrap_err();
    assert!(
        matches!(&error, zlink::Error::InvalidArgument(why) if why.contains("zlink.")),
        "{error}"
    );
}

/// A peer may send follow barriers (the framework's own ordering request) to anything:
/// each is answered without running a handler or changing anything, a flood of them
/// included, and the node keeps serving.
#[tokio::test]
async fn forged_follow_barriers_are_answered_and_run_nothing() {
    let a = object_server().await;
    a.spots().get_or_create("t1", "target", "").await.unwrap();
    let fence = a.spots().find("t1").await.unwrap().unwrap();
    let mut raw = admitted_raw(&a.endpoint()).await;
    // For a Spot this node runs (under a made-up fence), one it does not run, and an
    // Actor ID: all answered with an empty success.
    let targets = [
        (Command::SpotRequest, "t1"),
        (Command::SpotRequest, "nowhere"),
        (Command::ActorRequest, "no-actor"),
    ];
    for round in 0..300u64 {
        for (i, (command, target)) in targets.iter().enumerate() {
            let correlation = round * 10 + i as u64 + 1;
            let frames = call(
                *command,
                correlation,
                target,
                "zlink.follow-barrier",
                FENCE,
                Bytes::new(),
            );
            raw.send(&slices(&frames)).await.unwrap();
        }
    }
    let mut answered = 0;
    while answered < 900 {
        let (_, kind) = reply(&mut raw).await;
        assert_eq!(kind, None, "a barrier is answered with success");
        answered += 1;
    }
    // One-way barriers are simply dropped: they are not an application's messages, so
    // nothing is counted lost.
    let frames = call(
        Command::SpotSend,
        0,
        "t1",
        "zlink.follow-barrier",
        FENCE,
        Bytes::new(),
    );
    raw.send(&slices(&frames)).await.unwrap();
    // A request behind it on the same connection: once answered, the send was taken.
    let frames = call(
        Command::SpotRequest,
        5000,
        "t1",
        "zlink.follow-barrier",
        FENCE,
        Bytes::new(),
    );
    raw.send(&slices(&frames)).await.unwrap();
    assert_eq!(reply(&mut raw).await, (5000, None));
    TargetClient::new(&a, "t1").ping(&Ping).await.unwrap();
    let status = a.status();
    assert_eq!(status.lost_one_ways.total(), 0);
    assert_eq!(status.spots_owned, 1);
    assert_eq!(
        a.spots().find("t1").await.unwrap().unwrap(),
        fence,
        "the Spot's authority is unchanged"
    );
    a.shutdown().await;
}

/// Session binding commands from a hostile peer: a bind (38) with garbage, with a
/// session of another node, for no Actor and for another incarnation is answered with an
/// error and registers nothing; a forged relay tail is refused; a forged push (36) to a
/// node without sessions and forged member-disconnected notices (52) are dropped. The
/// node keeps serving.
#[tokio::test]
async fn hostile_session_bind_and_push_commands_are_refused_and_the_node_keeps_serving() {
    #[derive(Serialize)]
    struct SessionKey<'a> {
        rid: &'a str,
        node_generation: u64,
        session: u64,
    }
    #[derive(Serialize)]
    struct Bind<'a> {
        actor_generation: u64,
        node_generation: u64,
        session: SessionKey<'a>,
    }
    let a = object_server().await;
    let mut raw = admitted_raw(&a.endpoint()).await;
    let bind = |session_rid: &'static str, generation: u64| {
        cbor(&Bind {
            actor_generation: generation,
            node_generation: 0,
            session: SessionKey {
                rid: session_rid,
                node_generation: 7,
                session: 1,
            },
        })
    };
    let cases = [
        (
            1,
            Bytes::from_static(b"\xff\x00garbage"),
            ErrorKind::ProtocolError,
        ),
        // The binding would belong to a session on another node than the sender.
        (2, bind("someone-else", 1), ErrorKind::ProtocolError),
        // No Actor of that ID runs here (this node serves no Actors at all).
        (3, bind("raw", 1), ErrorKind::NotFound),
    ];
    for (correlation, payload, expected) in cases {
        let frames = call(
            Command::BoundSessionBind,
            correlation,
            "ann",
            "zlink.control",
            None,
            payload,
        );
        raw.send(&slices(&frames)).await.unwrap();
        let (answered, kind) = reply(&mut raw).await;
        assert_eq!(answered, correlation);
        assert_eq!(kind, Some(expected as u8), "case {correlation}");
    }
    // A forged push to a node that runs no sessions: dropped, nothing answers.
    let frames = call(
        Command::BoundSessionSend,
        0,
        "ann",
        "zlink.control",
        None,
        Bytes::from_static(b"\xa0"),
    );
    raw.send(&slices(&frames)).await.unwrap();
    // A Spot relay with a forged bound-session tail is a protocol error at the head.
    let mut frames = call(Command::SpotRequest, 9, "t1", "Ping", FENCE, cbor(&Ping));
    let mut head = frames[0].to_vec();
    head[4] |= zlink::wire::FLAG_SESSION_TAIL;
    head.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]);
    frames[0] = Bytes::from(head);
    raw.send(&slices(&frames)).await.unwrap();
    let (answered, kind) = reply(&mut raw).await;
    assert_eq!((answered, kind), (9, Some(ErrorKind::ProtocolError as u8)));
    // Forged member-disconnected notices (52): garbage, oversized, and a well-formed one
    // for a Spot this node does not run. One-ways: dropped, none answered, the link lives.
    #[derive(Serialize)]
    struct Member<'a> {
        actor: &'a str,
        object_generation: u64,
        mesh_name: &'a str,
        rid: &'a str,
    }
    let member = cbor(&Member {
        actor: "ann",
        object_generation: 1,
        mesh_name: "m",
        rid: "raw",
    });
    for (spot, payload) in [
        ("t1", Bytes::from_static(b"\xff\x00garbage")),
        ("t1", Bytes::from(vec![0xa0; 4096])),
        ("nowhere", member),
    ] {
        let frames = call(
            Command::SpotMemberDisconnected,
            0,
            spot,
            "zlink.control",
            None,
            payload,
        );
        raw.send(&slices(&frames)).await.unwrap();
    }
    raw.send(&slices(&frames)).await.unwrap();
    let (answered, kind) = reply(&mut raw).await;
    assert_eq!(
        (answered, kind),
        (9, Some(ErrorKind::ProtocolError as u8)),
        "the next reply is the next request's: the notices got none"
    );
    // Still serving.
    a.spots().get_or_create("t1", "target", "").await.unwrap();
    let pong = TargetClient::new(&a, "t1").ping(&Ping).await;
    assert!(pong.is_ok());
    a.shutdown().await;
}

/// Activation envelopes (command 39) from a hostile peer: garbage, an envelope whose type
/// is not its head's, another version, an entry-format ID, and a well-formed one for a
/// type this node does not serve are each answered with an error, and nothing is
/// activated. The node keeps serving.
#[tokio::test]
async fn hostile_activation_envelopes_are_refused_and_nothing_is_activated() {
    #[derive(Serialize)]
    struct Envelope<'a> {
        version: u8,
        stable_type: &'a str,
        packet: &'a str,
        request: bool,
        metadata: Vec<(String, String)>,
        #[serde(with = "serde_bytes")]
        payload: Vec<u8>,
    }
    let envelope = |version: u8, stable_type: &'static str| {
        cbor(&Envelope {
            version,
            stable_type,
            packet: "Ping",
            request: true,
            metadata: Vec::new(),
            payload: Vec::new(),
        })
    };
    let a = object_server().await;
    let mut raw = admitted_raw(&a.endpoint()).await;
    let cases = [
        (
            1,
            "m1",
            "match",
            Bytes::from_static(b"\xff\x00garbage"),
            ErrorKind::ProtocolError,
        ),
        (
            2,
            "m2",
            "match",
            envelope(1, "other"),
            ErrorKind::ProtocolError,
        ),
        (
            3,
            "m3",
            "match",
            envelope(9, "match"),
            ErrorKind::ProtocolError,
        ),
        (
            4,
            "zlink-entry-00000000-0000-4000-8000-000000000000",
            "match",
            envelope(1, "match"),
            ErrorKind::InvalidOperation,
        ),
        (5, "m5", "match", envelope(1, "match"), ErrorKind::NotFound),
    ];
    for (correlation, target, stable_type, payload, expected) in cases {
        let frames = call(
            Command::InstanceSpot,
            correlation,
            target,
            stable_type,
            None,
            payload,
        );
        raw.send(&slices(&frames)).await.unwrap();
        let (answered, kind) = reply(&mut raw).await;
        assert_eq!(answered, correlation);
        assert_eq!(kind, Some(expected as u8), "case {correlation}");
    }
    for id in ["m1", "m2", "m3", "m5"] {
        assert_eq!(a.spots().find(id).await.unwrap(), None, "{id}");
    }
    a.spots().get_or_create("t1", "target", "").await.unwrap();
    assert!(TargetClient::new(&a, "t1").ping(&Ping).await.is_ok());
    a.shutdown().await;
}

#[tokio::test]
async fn hostile_creation_settled_waits_are_refused_or_answered_at_once() {
    let a = object_server().await;
    let mut raw = admitted_raw(&a.endpoint()).await;
    let generation = |g: u64| Bytes::copy_from_slice(&g.to_be_bytes());
    let cases = [
        // Not an 8-byte generation: garbage, empty, oversized.
        (
            1,
            "m1",
            Bytes::from_static(b"\xff\x00garbage"),
            Some(ErrorKind::ProtocolError),
        ),
        (2, "m2", Bytes::new(), Some(ErrorKind::ProtocolError)),
        (
            3,
            "m3",
            Bytes::from(vec![0u8; 4096]),
            Some(ErrorKind::ProtocolError),
        ),
        // Well formed, for IDs no creation of this node works on (one exists, Ready): at
        // once, with nothing to wait for.
        (4, "nothing", generation(1), None),
        (5, "t1", generation(u64::MAX), None),
    ];
    a.spots().get_or_create("t1", "target", "").await.unwrap();
    for (correlation, target, payload, expected) in cases {
        let frames = call(
            Command::CreationSettled,
            correlation,
            target,
            "zlink.settled",
            None,
            payload,
        );
        raw.send(&slices(&frames)).await.unwrap();
        let (answered, kind) =
            tokio::time::timeout(std::time::Duration::from_secs(1), reply(&mut raw))
                .await
                .expect("answered at once, not held");
        assert_eq!(answered, correlation);
        assert_eq!(kind, expected.map(|k| k as u8), "case {correlation}");
    }
    assert!(TargetClient::new(&a, "t1").ping(&Ping).await.is_ok());
    a.shutdown().await;
}
