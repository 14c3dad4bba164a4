//! The turn loop on its own: a node without sockets, a scripted instance, jobs put straight
//! into the object's mailbox.

use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use crate::wire::Payload;
use crate::Result;
use tokio_util::task::TaskTracker;

use super::*;
use crate::address::SpotId;
use crate::call::BoxFuture;
use crate::call::PacketKind;
use crate::handle::Handle;
use crate::object::authority::tests::sample;
use crate::object::authority::AuthorityState;
use crate::object::authority_store::Versioned;
use crate::object::lifecycle::Relocation;
use crate::object::lost_sends::LostSends;
use crate::object::object_job::HandlerMessage;
use crate::object::object_job::ReplyTo;
use crate::object::object_type::{Factory, TypeDef};
use crate::object::stop_list::StopList;
use crate::object::timer::TimerTick;
use crate::store::{OwnerLease, OwnerLeaseSettings, StoreVersion};

const ECHO: usize = 0;
const PANIC: usize = 1;
const HANG: usize = 2;

/// An instance whose handlers echo, panic or never finish, and which writes down every
/// hook it hears.
struct Scripted {
    heard: Arc<Mutex<Vec<String>>>,
}

impl Scripted {
    fn note(&self, what: impl Into<String>) {
        self.heard.lock().unwrap().push(what.into());
    }
}

#[async_trait]
impl Instance for Scripted {
    fn handle(
        &mut self,
        _turn: TurnInfo,
        handler: usize,
        payload: Payload,
    ) -> BoxFuture<'_, Result<Payload>> {
        self.note(format!("handle {handler}"));
        Box::pin(async move {
            match handler {
                PANIC => panic!("a handler that panics"),
                HANG => std::future::pending().await,
                _ => Ok(payload),
            }
        })
    }

    async fn on_initialize(&mut self, _turn: TurnInfo) -> Result<()> {
        self.note("initialize");
        Ok(())
    }

    async fn on_timer(&mut self, _turn: TurnInfo, _tick: TimerTick) -> Result<()> {
        Ok(())
    }

    async fn on_closing(&mut self, _turn: TurnInfo, reason: ClosingReason) {
        self.note(format!("closing {reason:?}"));
    }
}

/// A running object of the scripted instance and what it heard; `_handle` keeps its
/// node's handle alive.
struct Running {
    live: Arc<LiveObject>,
    heard: Arc<Mutex<Vec<String>>>,
    running: Arc<StopList>,
    tracker: TaskTracker,
    _handle: Handle,
}

fn start() -> Running {
    let handle = Handle::new(crate::mesh::links::tests::node());
    let object_type = TypeDef::new(
        "scripted",
        vec![
            ("Echo".into(), PacketKind::Request),
            ("Panic".into(), PacketKind::Request),
            ("Hang".into(), PacketKind::Request),
        ],
        Relocation::Disable,
        Factory::Entry,
    )
    .expect("a valid type");
    let heard = Arc::new(Mutex::new(Vec::new()));
    let running = Arc::new(StopList::default());
    let tracker = TaskTracker::new();
    let host = ObjectHost {
        handle: handle.downgrade(),
        services: Weak::<crate::object::server::ObjectServer>::new(),
        lease: OwnerLease::new(OwnerLeaseSettings::default()),
        tracker: tracker.clone(),
        cancel: CancellationToken::new(),
        lost: Arc::new(LostSends::default()),
        running: running.clone(),
    };
    let (go, wait) = oneshot::channel();
    let live = crate::object::launch::start(
        ObjectKey::from(&SpotId::new("s").unwrap()),
        Arc::new(object_type),
        Versioned {
            record: sample(AuthorityState::Ready),
            version: StoreVersion(String::new()),
        },
        Box::new(Scripted {
            heard: heard.clone(),
        }),
        host,
        wait.into(),
        None,
    );
    go.send(true).unwrap();
    Running {
        live,
        heard,
        running,
        tracker,
        _handle: handle,
    }
}

/// Queues a request for handler `handler`; its result comes out of the receiver.
fn request(
    live: &LiveObject,
    handler: usize,
    body: &'static [u8],
) -> impl std::future::Future<Output = std::result::Result<Result<Bytes>, oneshot::error::RecvError>>
{
    let (tx, rx) = oneshot::channel::<Result<Payload>>();
    let job = ObjectJob::Message(HandlerMessage {
        handler,
        packet: "Echo",
        payload: Payload::encoded(Bytes::from_static(body)),
        metadata: Metadata::new(),
        deadline: None,
        reply: Some(ReplyTo::Local(tx)),
        operation: 0,
        queued_at: None,
    });
    assert!(live.try_deliver(job, body.len()).is_ok(), "queued");
    async move { rx.await.map(|reply| reply.and_then(Payload::into_bytes)) }
}

async fn within<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(5), f)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen within 5 s"))
}

#[tokio::test]
async fn jobs_run_one_at_a_time_in_arrival_order_after_on_initialize() {
    let r = start();
    let replies: Vec<_> = [&b"1"[..], b"2", b"3"]
        .into_iter()
        .map(|body| request(&r.live, ECHO, body))
        .collect();
    for (reply, body) in replies.into_iter().zip([&b"1"[..], b"2", b"3"]) {
        let answered = within("a reply", reply).await.unwrap().unwrap();
        assert_eq!(&answered[..], body);
    }
    let heard = r.heard.lock().unwrap().clone();
    assert_eq!(heard, ["initialize", "handle 0", "handle 0", "handle 0"]);
}

#[tokio::test]
async fn a_panicking_handler_fails_its_own_request_and_the_loop_runs_on() {
    let r = start();
    let failed = within("the panic's reply", request(&r.live, PANIC, b""))
        .await
        .unwrap()
        .unwrap_err();
    assert!(failed.is(ErrorKind::InternalFailure), "{failed}");
    let next = within("the next reply", request(&r.live, ECHO, b"after"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&next[..], b"after");
}

#[tokio::test]
async fn a_node_stop_reaches_an_idle_loop_and_refuses_what_is_still_queued() {
    let r = start();
    within("a first turn", request(&r.live, ECHO, b"x"))
        .await
        .unwrap()
        .unwrap();
    // Idle now: only the node's stop list can end its wait.
    r.running.stop_all();
    r.tracker.close();
    within("the loop's end", r.tracker.wait()).await;
    let heard = r.heard.lock().unwrap().clone();
    assert!(
        heard.iter().any(|h| h.starts_with("closing")),
        "the stopped object heard its last hook: {heard:?}"
    );
    // Its mailbox is closed: a late job is refused, nothing runs.
    let (tx, _rx) = oneshot::channel();
    let late = ObjectJob::Message(HandlerMessage {
        handler: ECHO,
        packet: "Echo",
        payload: Payload::default(),
        metadata: Metadata::new(),
        deadline: None,
        reply: Some(ReplyTo::Local(tx)),
        operation: 0,
        queued_at: None,
    });
    assert!(r.live.try_deliver(late, 0).is_err());
}

#[tokio::test]
async fn stopping_an_object_ends_a_hanging_handler_with_shutting_down() {
    let r = start();
    let hanging = request(&r.live, HANG, b"");
    let queued = request(&r.live, ECHO, b"never");
    // The hanging handler is running once its turn began.
    within("the hanging turn", async {
        while !r.heard.lock().unwrap().iter().any(|h| h == "handle 2") {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    r.live.stop();
    let ended = within("the hanging request's end", hanging)
        .await
        .unwrap()
        .unwrap_err();
    assert!(ended.is(ErrorKind::ShuttingDown), "{ended}");
    let refused = within("the queued request's end", queued)
        .await
        .unwrap()
        .unwrap_err();
    assert!(refused.is(ErrorKind::ShuttingDown), "{refused}");
}

/// Waits until no task runs the object: its loop is parked in the mailbox.
async fn parked(r: &Running) {
    within("the loop's park", async {
        while !r.tracker.is_empty() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_loop_whose_mailbox_ran_empty_keeps_its_task_a_moment_for_the_next_message_then_parks() {
    let r = start();
    within("a first turn", request(&r.live, ECHO, b"x"))
        .await
        .unwrap()
        .unwrap();
    // The reply is out and nothing is queued: the loop still waits on its task.
    assert_eq!(r.tracker.len(), 1, "the loop lingers on its task");
    let answered = within("a turn while it lingers", request(&r.live, ECHO, b"y"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&answered[..], b"y");
    assert_eq!(r.tracker.len(), 1, "the loop lingers again after that turn");
    tokio::time::sleep(LINGER).await;
    parked(&r).await;
    let answered = within("a turn after the park", request(&r.live, ECHO, b"z"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&answered[..], b"z");
}

#[tokio::test]
async fn an_idle_object_holds_no_task_and_work_that_arrives_wakes_it_in_order() {
    let r = start();
    within("a first turn", request(&r.live, ECHO, b"x"))
        .await
        .unwrap()
        .unwrap();
    parked(&r).await;
    for round in 0..3 {
        let bodies: [&'static [u8]; 3] = [b"1", b"2", b"3"];
        let replies: Vec<_> = bodies
            .iter()
            .map(|body| request(&r.live, ECHO, body))
            .collect();
        for (reply, body) in replies.into_iter().zip(bodies) {
            let answered = within("a reply", reply).await.unwrap().unwrap();
            assert_eq!(&answered[..], body, "round {round}: in arrival order");
        }
        parked(&r).await;
    }
    let heard = r.heard.lock().unwrap().clone();
    assert_eq!(heard.len(), 1 + 1 + 9, "each message ran once: {heard:?}");
}
