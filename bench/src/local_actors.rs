//! Local Actor messaging in one process: a zlink Actor's request and one-way send by ID
//! against kameo's `ask` and `tell` to a local actor, with the same payload, measured the
//! same way in the same run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kameo::actor::Spawn;
use kameo::message::{Context, Message};
use tokio::time::Instant;
use zlink::object::{Actor, ActorContext};
use zlink::Runtime;

use crate::stats::{cpu_us_per, process_cpu, Latency, Throughput};
use crate::zlink_rpc::{Echo, Echoed};
use crate::BoxError;

/// A one-way message carrying the payload; the Actor counts what arrived.
#[derive(Debug, serde::Serialize, serde::Deserialize, zlink::Message)]
pub struct Push(#[serde(with = "serde_bytes")] pub Vec<u8>);

/// How many one-way messages an Actor has taken.
#[derive(Debug, serde::Serialize, serde::Deserialize, zlink::Message)]
#[message(reply = Count)]
pub struct HowMany;

#[derive(Debug, serde::Serialize, serde::Deserialize, zlink::Message)]
pub struct Count(pub u64);

/// The zlink contestant: echoes requests, counts sends.
pub struct EchoActor {
    pushed: u64,
}

#[zlink::actor(type = "bench-echo-actor", relocation = recreate)]
impl EchoActor {
    #[handler]
    async fn echo(&mut self, e: Echo, _ctx: &ActorContext) -> zlink::Result<Echoed> {
        Ok(Echoed(e.0))
    }

    #[handler]
    async fn push(&mut self, p: Push, _ctx: &ActorContext) -> zlink::Result<()> {
        self.pushed += p.0.len().min(1) as u64;
        Ok(())
    }

    #[handler]
    async fn how_many(&mut self, _q: HowMany, _ctx: &ActorContext) -> zlink::Result<Count> {
        Ok(Count(self.pushed))
    }
}

impl Actor for EchoActor {}

/// The kameo contestant: the same work on the same payload.
#[derive(kameo::Actor)]
pub struct KameoEcho {
    pushed: u64,
}

impl Message<Echo> for KameoEcho {
    type Reply = Vec<u8>;

    async fn handle(&mut self, e: Echo, _ctx: &mut Context<Self, Self::Reply>) -> Vec<u8> {
        e.0
    }
}

impl Message<Push> for KameoEcho {
    type Reply = ();

    async fn handle(&mut self, p: Push, _ctx: &mut Context<Self, Self::Reply>) {
        self.pushed += p.0.len().min(1) as u64;
    }
}

impl Message<HowMany> for KameoEcho {
    type Reply = u64;

    async fn handle(&mut self, _q: HowMany, _ctx: &mut Context<Self, Self::Reply>) -> u64 {
        self.pushed
    }
}

/// One contestant's figures.
pub struct LocalFigures {
    pub request: Latency,
    pub requests: Throughput,
    pub sends: Throughput,
    /// CPU microseconds (the whole process) per pipelined request and per one-way send.
    pub request_cpu_us: Option<f64>,
    pub send_cpu_us: Option<f64>,
}

/// Both contestants' figures.
pub struct LocalComparison {
    pub zlink: LocalFigures,
    pub kameo: LocalFigures,
}

/// Mailbox bound for both: zlink's default Actor queue.
const MAILBOX: usize = 4096;

/// The plan both contestants follow.
#[derive(Clone, Copy)]
struct Plan {
    warmup: usize,
    requests: usize,
    window: usize,
    duration: Duration,
}

impl Plan {
    /// One-way messages in the send run.
    fn sends(&self) -> u64 {
        (self.requests * 20).max(10_000) as u64
    }
}

/// Sequential requests to the first target, then `window` callers spread over all of
/// them; the same for both contestants.
async fn requests_over<T, F, Fut>(
    targets: Vec<T>,
    request: F,
    plan: Plan,
) -> Result<(Latency, Throughput, Option<f64>), BoxError>
where
    T: Clone + Send + Sync + 'static,
    F: Fn(T) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), BoxError>> + Send + 'static,
{
    let one = targets[0].clone();
    let latency =
        crate::drive::sequential(|| request(one.clone()), plan.warmup, plan.requests).await?;
    let next = Arc::new(AtomicU64::new(0));
    let cpu_before = process_cpu();
    let throughput = crate::drive::pipelined(
        move || {
            let i = next.fetch_add(1, Ordering::Relaxed) as usize % targets.len();
            request(targets[i].clone())
        },
        plan.window,
        plan.duration,
    )
    .await?;
    let cpu = cpu_since(cpu_before);
    Ok((
        Latency::of(latency).ok_or("no samples")?,
        throughput,
        cpu_us_per(cpu, throughput.messages),
    ))
}

fn cpu_since(before: Option<Duration>) -> Option<Duration> {
    Some(process_cpu()?.saturating_sub(before?))
}

/// How long `count` one-way sends took, once `flush` (answered after every send ran)
/// reports how many arrived.
fn sends_figure(count: u64, arrived: u64, started: Instant) -> Result<Throughput, BoxError> {
    if arrived < count {
        return Err(format!("{arrived} of {count} one-way messages arrived").into());
    }
    Ok(Throughput {
        messages: count,
        elapsed: started.elapsed(),
    })
}

pub async fn run(
    payload: &[u8],
    warmup: usize,
    requests: usize,
    window: usize,
    duration: Duration,
) -> Result<LocalComparison, BoxError> {
    let plan = Plan {
        warmup,
        requests,
        window: window.max(1),
        duration,
    };
    let payload: Arc<[u8]> = payload.into();
    let zlink = zlink_figures(&payload, plan).await?;
    let kameo = kameo_figures(&payload, plan).await?;
    Ok(LocalComparison { zlink, kameo })
}

async fn zlink_figures(payload: &Arc<[u8]>, plan: Plan) -> Result<LocalFigures, BoxError> {
    let rt = Runtime::builder()
        .mesh_name("bench-local")
        .rid("local")
        .listen("tcp://127.0.0.1:0")
        .location_store(<dyn zlink::store::LocationStore>::in_memory())
        .relocation_store(<dyn zlink::store::RelocationStore>::in_memory())
        .actor_type(EchoActor::actor_type(|_| EchoActor { pushed: 0 })?)
        .build()?
        .start()
        .await?;
    let mut clients = Vec::new();
    for i in 0..plan.window {
        let id = format!("local-{i}");
        rt.actors().create(&id, EchoActor::STABLE_TYPE).await?;
        clients.push(EchoActorClient::new(&rt, id));
    }
    let one = clients[0].clone();
    let echo = {
        let payload = payload.clone();
        move |client: EchoActorClient| {
            let payload = payload.clone();
            async move {
                let reply = client.echo(Echo(payload.to_vec())).await?;
                crate::drive::check_echo(payload.len(), reply.0.len())
            }
        }
    };
    let (request, requests, request_cpu_us) = requests_over(clients, echo, plan).await?;
    let count = plan.sends();
    let cpu_before = process_cpu();
    let started = Instant::now();
    for _ in 0..count {
        one.push(Push(payload.to_vec())).await?;
    }
    // Every send has run when this answers (one Actor, one origin: FIFO).
    let Count(arrived) = one.how_many(&HowMany).await?;
    let sends = sends_figure(count, arrived, started)?;
    let send_cpu_us = cpu_us_per(cpu_since(cpu_before), count);
    rt.shutdown().await;
    Ok(LocalFigures {
        request,
        requests,
        sends,
        request_cpu_us,
        send_cpu_us,
    })
}

async fn kameo_figures(payload: &Arc<[u8]>, plan: Plan) -> Result<LocalFigures, BoxError> {
    let refs: Vec<_> = (0..plan.window)
        .map(|_| {
            KameoEcho::spawn_with_mailbox(KameoEcho { pushed: 0 }, kameo::mailbox::bounded(MAILBOX))
        })
        .collect();
    let one = refs[0].clone();
    let ask = {
        let payload = payload.clone();
        move |actor: kameo::actor::ActorRef<KameoEcho>| {
            let payload = payload.clone();
            async move {
                let reply = actor
                    .ask(Echo(payload.to_vec()))
                    .await
                    .map_err(|e| format!("kameo ask: {e}"))?;
                crate::drive::check_echo(payload.len(), reply.len())
            }
        }
    };
    let (request, requests, request_cpu_us) = requests_over(refs.clone(), ask, plan).await?;
    let count = plan.sends();
    let cpu_before = process_cpu();
    let started = Instant::now();
    for _ in 0..count {
        one.tell(Push(payload.to_vec()))
            .await
            .map_err(|e| format!("kameo tell: {e}"))?;
    }
    let arrived = one
        .ask(HowMany)
        .await
        .map_err(|e| format!("kameo ask: {e}"))?;
    let sends = sends_figure(count, arrived, started)?;
    let send_cpu_us = cpu_us_per(cpu_since(cpu_before), count);
    for actor in &refs {
        actor.kill();
    }
    Ok(LocalFigures {
        request,
        requests,
        sends,
        request_cpu_us,
        send_cpu_us,
    })
}
