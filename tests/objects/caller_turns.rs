//! A call on the owner's node to an idle Actor runs on the caller's task; everything a turn
//! guarantees still holds: a handler that waits goes on in the Actor's own loop, a caller
//! that gives up never cancels it, what came after it runs after it, calls nest only so
//! deep, and a node's stop ends a turn wherever it runs.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::Notify;
use zlink::object::{Actor, ActorContext, ClosingReason};
use zlink::{CallOptions, ErrorKind, Runtime};
use zlink_testkit::{wait_until, RedisServer};
use zlink_tests::*;

/// Answers with the task its handler ran on.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Tasks)]
pub struct WhereAmI;

/// Asks the Actor `next` (if any) where it runs, then says where this one ran first.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Tasks)]
pub struct Relay {
    pub next: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Tasks(pub Vec<String>);

/// Waits for the test's go, then notes "waited".
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Wait;

/// The same, as a request.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Noted)]
pub struct WaitAndAnswer;

/// Notes a number.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Mark(pub u32);

/// What was noted, in order.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Noted)]
pub struct Seen;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Noted(pub Vec<String>);

#[derive(Clone, Default)]
struct Shared {
    go: Arc<Notify>,
    noted: Arc<Mutex<Vec<String>>>,
    closings: Arc<Mutex<Vec<ClosingReason>>>,
    /// Handlers that began to wait.
    waiting: Arc<AtomicUsize>,
}

pub struct Probe {
    shared: Shared,
}

fn this_task() -> String {
    tokio::task::try_id().map_or_else(|| "none".into(), |id| id.to_string())
}

#[zlink::actor(type = "probe", relocation = recreate)]
impl Probe {
    #[handler]
    async fn where_am_i(&mut self, _w: WhereAmI, _ctx: &ActorContext) -> zlink::Result<Tasks> {
        Ok(Tasks(vec![this_task()]))
    }

    #[handler]
    async fn relay(&mut self, relay: Relay, ctx: &ActorContext) -> zlink::Result<Tasks> {
        let mut tasks = vec![this_task()];
        if let Some((next, rest)) = relay.next.split_first() {
            let further = ProbeClient::new(ctx.handle(), next.clone())
                .relay(Relay {
                    next: rest.to_vec(),
                })
                .await?;
            tasks.extend(further.0);
        }
        Ok(Tasks(tasks))
    }

    #[handler]
    async fn wait(&mut self, _w: Wait, _ctx: &ActorContext) -> zlink::Result<()> {
        self.shared.go.notified().await;
        self.shared.noted.lock().unwrap().push("waited".into());
        Ok(())
    }

    #[handler]
    async fn wait_and_answer(
        &mut self,
        _w: WaitAndAnswer,
        _ctx: &ActorContext,
    ) -> zlink::Result<Noted> {
        self.shared.waiting.fetch_add(1, Ordering::SeqCst);
        self.shared.go.notified().await;
        self.shared.noted.lock().unwrap().push("waited".into());
        Ok(Noted(vec![]))
    }

    #[handler]
    async fn mark(&mut self, mark: Mark, _ctx: &ActorContext) -> zlink::Result<()> {
        self.shared.noted.lock().unwrap().push(mark.0.to_string());
        Ok(())
    }

    #[handler]
    async fn seen(&mut self, _s: Seen, _ctx: &ActorContext) -> zlink::Result<Noted> {
        Ok(Noted(self.shared.noted.lock().unwrap().clone()))
    }
}

#[zlink::async_trait]
impl Actor for Probe {
    async fn on_closing(&mut self, _ctx: &ActorContext, reason: ClosingReason) {
        self.shared.closings.lock().unwrap().push(reason);
    }
}

async fn probe_node(redis: &RedisServer, shared: &Shared, ids: &[&str]) -> Runtime {
    let shared_for_type = shared.clone();
    let probes = Probe::actor_type(move |_| Probe {
        shared: shared_for_type.clone(),
    })
    .expect("a valid Actor type");
    let rt =
        start(discovered_node("a", &redis_store(redis), quick_lease()).actor_type(probes)).await;
    for id in ids {
        rt.actors().create(id, "probe").await.unwrap();
    }
    rt
}

/// Runs `call` on a task of its own, with that task's ID.
async fn on_a_task<F, T>(call: F) -> (String, T)
where
    F: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    tokio::spawn(async move { (this_task(), call.await) })
        .await
        .expect("the calling task")
}

#[tokio::test]
async fn a_request_to_an_idle_local_actor_runs_on_the_callers_task() {
    let redis = RedisServer::start().expect("redis-server");
    let a = probe_node(&redis, &Shared::default(), &["p"]).await;
    let client = ProbeClient::new(&a, "p");
    let (caller, ran) = on_a_task(async move { client.where_am_i(WhereAmI).await.unwrap() }).await;
    assert_eq!(ran.0, [caller], "the handler ran where the call was made");
    stop([a]).await;
}

#[tokio::test]
async fn local_calls_nest_on_the_callers_task_only_to_a_bounded_depth() {
    let redis = RedisServer::start().expect("redis-server");
    let ids = ["p0", "p1", "p2", "p3", "p4", "p5"];
    let a = probe_node(&redis, &Shared::default(), &ids).await;
    // Each route is known already: no call waits for the Location Store.
    for id in ids {
        ProbeClient::new(&a, id).where_am_i(WhereAmI).await.unwrap();
    }
    let client = ProbeClient::new(&a, "p0");
    let next = ids[1..].iter().map(|s| s.to_string()).collect();
    let (caller, ran) = on_a_task(async move { client.relay(Relay { next }).await.unwrap() }).await;
    assert_eq!(ran.0.len(), ids.len(), "every Actor of the chain answered");
    assert_eq!(
        ran.0[..4],
        [
            caller.clone(),
            caller.clone(),
            caller.clone(),
            caller.clone()
        ],
        "four turns deep on the caller's task"
    );
    assert!(
        ran.0[4..].iter().all(|task| *task != caller),
        "deeper turns run on their Actors' own tasks: {ran:?}"
    );
    stop([a]).await;
}

#[tokio::test]
async fn a_one_way_whose_handler_waits_returns_at_once_and_what_came_after_runs_after_it() {
    let redis = RedisServer::start().expect("redis-server");
    let shared = Shared::default();
    let a = probe_node(&redis, &shared, &["p"]).await;
    let client = ProbeClient::new(&a, "p");
    tokio::time::timeout(WAIT, async {
        client.wait(Wait).await.unwrap();
        client.mark(Mark(1)).await.unwrap();
        client.mark(Mark(2)).await.unwrap();
    })
    .await
    .expect("the sends return while the first handler still waits");
    assert!(
        shared.noted.lock().unwrap().is_empty(),
        "nothing overtook it"
    );
    let seen = tokio::spawn({
        let client = client.clone();
        async move { client.seen(Seen).await }
    });
    shared.go.notify_one();
    let seen = seen.await.unwrap().unwrap();
    assert_eq!(
        seen.0,
        ["waited", "1", "2"],
        "one turn at a time, in the order sent"
    );
    stop([a]).await;
}

#[tokio::test]
async fn a_caller_that_gives_up_on_a_waiting_handler_never_cancels_it() {
    let redis = RedisServer::start().expect("redis-server");
    let shared = Shared::default();
    let a = probe_node(&redis, &shared, &["p"]).await;
    let client = ProbeClient::new(&a, "p");
    let short = CallOptions::new().timeout(Duration::from_millis(100));
    let gave_up = client
        .wait_and_answer(WaitAndAnswer)
        .options(short)
        .await
        .unwrap_err();
    assert!(gave_up.is(ErrorKind::DeadlineExceeded), "{gave_up}");
    // A caller that drops its call before any answer cancels nothing either.
    let dropped = tokio::time::timeout(Duration::from_millis(50), client.mark(Mark(1))).await;
    assert!(
        dropped.is_ok(),
        "a one-way queued behind it returns at once"
    );
    shared.go.notify_one();
    wait_until(WAIT, "the handler ran to its end", || async {
        shared.noted.lock().unwrap().first().map(String::as_str) == Some("waited")
    })
    .await;
    let seen = client.seen(Seen).await.unwrap();
    assert_eq!(seen.0, ["waited", "1"]);
    stop([a]).await;
}

#[tokio::test]
async fn a_node_stop_ends_a_turn_begun_on_a_callers_task_and_the_actor_hears_it() {
    let redis = RedisServer::start().expect("redis-server");
    let shared = Shared::default();
    let a = probe_node(&redis, &shared, &["p"]).await;
    let client = ProbeClient::new(&a, "p");
    let waiting = tokio::spawn(async move { client.wait_and_answer(WaitAndAnswer).await });
    wait_until(WAIT, "the handler waits", || async {
        shared.waiting.load(Ordering::SeqCst) == 1
    })
    .await;
    // The handler never finishes by itself: the shutdown waits out its grace, then stops it.
    let outcome = a
        .shutdown_with(zlink::ShutdownOptions::new().grace(std::time::Duration::from_millis(300)))
        .await;
    assert_eq!(
        outcome,
        zlink::ShutdownOutcome::ForceStopped(zlink::ShutdownReason::DeadlineExceeded)
    );
    let stopped = waiting.await.unwrap().unwrap_err();
    assert!(stopped.is(ErrorKind::ShuttingDown), "{stopped}");
    assert_eq!(
        *shared.closings.lock().unwrap(),
        [ClosingReason::HostShutdown],
        "on_closing ran once, with the instance back from the waiting turn"
    );
    assert!(
        shared.noted.lock().unwrap().is_empty(),
        "the waiting handler was ended"
    );
}
