//! A player node for the restart and recovery tests: it serves a `tally` Actor and the
//! `duel` Instance Spot over a Redis Location Store, and runs as a child process that a
//! test stops with SIGINT (as Ctrl-C does) or kills with SIGKILL, then starts again under
//! the same RID.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};
use zlink::object::{Actor, ActorContext};
use zlink::store::{LocationStore, OwnerId, RelocationStore};
use zlink::Runtime;

use crate::instance_races::{duel_type, Probe};
use crate::{discovered_node, quick_lease, start, WAIT};

/// Adds to a tally; answers the total, who holds it and its incarnation.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Tallied)]
pub struct Tally(pub u64);

/// A tally's answer.
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
pub struct Tallied {
    pub total: u64,
    pub by: String,
    pub generation: u64,
}

/// Starts a 20 ms timer whose ticks the node counts.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Tallied)]
pub struct Beat;

/// What one node's objects did: factory runs and timer ticks.
#[derive(Default, Clone)]
pub struct Counts {
    pub built: Arc<AtomicUsize>,
    pub ticks: Arc<AtomicUsize>,
}

impl Counts {
    pub fn built(&self) -> usize {
        self.built.load(Ordering::SeqCst)
    }

    pub fn ticks(&self) -> usize {
        self.ticks.load(Ordering::SeqCst)
    }
}

/// A counter Actor whose state lives only in memory: a new incarnation starts at 0.
pub struct Tallier {
    node: String,
    total: u64,
    counts: Counts,
}

impl Tallier {
    fn answer(&mut self, add: u64, generation: u64) -> Tallied {
        self.total += add;
        Tallied {
            total: self.total,
            by: self.node.clone(),
            generation,
        }
    }
}

#[zlink::actor(type = "tally", relocation = preserve)]
impl Tallier {
    #[handler]
    async fn tally(&mut self, tally: Tally, ctx: &ActorContext) -> zlink::Result<Tallied> {
        Ok(self.answer(tally.0, ctx.generation()))
    }

    #[handler]
    async fn beat(&mut self, _beat: Beat, ctx: &ActorContext) -> zlink::Result<Tallied> {
        ctx.start_timer(
            "beat",
            Duration::from_millis(20),
            zlink::object::TimerPolicy::SkipLateTicks,
        )?;
        Ok(self.answer(0, ctx.generation()))
    }
}

#[zlink::async_trait]
impl Actor for Tallier {
    async fn on_timer(
        &mut self,
        _ctx: &ActorContext,
        _tick: zlink::object::TimerTick,
    ) -> zlink::Result<()> {
        self.counts.ticks.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// A tally whose type reclaims on owner loss: a caller that finds its owner dead makes a
/// new one.
pub struct Phoenix {
    node: String,
    total: u64,
}

#[zlink::actor(type = "phoenix", relocation = disable, on_owner_lost = reclaim)]
impl Phoenix {
    #[handler]
    async fn tally(&mut self, tally: Tally, ctx: &ActorContext) -> zlink::Result<Tallied> {
        self.total += tally.0;
        Ok(Tallied {
            total: self.total,
            by: self.node.clone(),
            generation: ctx.generation(),
        })
    }
}

impl Actor for Phoenix {}

/// An Instance Spot type that reclaims on owner loss.
pub struct Beacon {
    node: String,
    total: u64,
}

#[zlink::spot(type = "beacon", relocation = disable, instance, on_owner_lost = reclaim)]
impl Beacon {
    #[handler]
    async fn tally(
        &mut self,
        tally: Tally,
        ctx: &zlink::object::SpotContext,
    ) -> zlink::Result<Tallied> {
        self.total += tally.0;
        Ok(Tallied {
            total: self.total,
            by: self.node.clone(),
            generation: ctx.generation(),
        })
    }
}

impl zlink::object::Spot for Beacon {}

/// The `phoenix` and `beacon` types as node `node` makes them, counting factory runs.
pub fn phoenix_types(
    node: &str,
    counts: &Counts,
) -> (zlink::object::ActorType, zlink::object::SpotType) {
    let (name, built) = (node.to_string(), counts.built.clone());
    let phoenix = Phoenix::actor_type(move |_ctx| {
        built.fetch_add(1, Ordering::SeqCst);
        Phoenix {
            node: name.clone(),
            total: 0,
        }
    })
    .expect("a valid Actor type");
    let (name, built) = (node.to_string(), counts.built.clone());
    let beacon = Beacon::spot_type(move |_ctx| {
        built.fetch_add(1, Ordering::SeqCst);
        Beacon {
            node: name.clone(),
            total: 0,
        }
    })
    .expect("a valid Spot type");
    (phoenix, beacon)
}

impl zlink::object::RelocationState for Tallier {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        Ok(self.total.to_be_bytes().to_vec())
    }

    fn restore(&mut self, state: &[u8]) -> zlink::Result<()> {
        let bytes: [u8; 8] = state
            .try_into()
            .map_err(|_| zlink::Error::InvalidArgument("a tally is 8 bytes".into()))?;
        self.total = u64::from_be_bytes(bytes);
        Ok(())
    }
}

/// The `tally` type as node `node` makes it, counting into `counts`.
pub fn tally_type(node: &str, counts: &Counts) -> zlink::object::ActorType {
    let (node, counts) = (node.to_string(), counts.clone());
    Tallier::actor_type(move |_ctx| {
        counts.built.fetch_add(1, Ordering::SeqCst);
        Tallier {
            node: node.clone(),
            total: 0,
            counts: counts.clone(),
        }
    })
    .expect("a valid Actor type")
}

/// A Redis Location Store and Relocation Store on `url` under the tests' prefix.
pub fn redis_stores(url: &str) -> (Arc<dyn LocationStore>, Arc<dyn RelocationStore>) {
    let options = zlink::store::RedisOptions::new(url.to_string(), "zlink-test")
        .operation_timeout(Duration::from_millis(500));
    (
        Arc::new(zlink::store::RedisLocationStore::new(options.clone()).expect("redis options")),
        Arc::new(zlink::store::RedisRelocationStore::new(options).expect("redis options")),
    )
}

/// Node `rid` serving tallies, phoenixes (which never move) and duels (duels watched by `probe`).
pub async fn player_node(
    rid: &str,
    store: &Arc<dyn LocationStore>,
    roots: &Arc<dyn RelocationStore>,
    probe: &Arc<Probe>,
    counts: &Counts,
) -> Runtime {
    start(
        discovered_node(rid, store, quick_lease())
            .relocation_store(roots.clone())
            .actor_type(tally_type(rid, counts))
            .actor_type(phoenix_types(rid, counts).0)
            .spot_type(duel_type(probe)),
    )
    .await
}

/// Node `rid` serving phoenixes and beacons, counting into `counts`.
pub async fn phoenix_node(
    rid: &str,
    store: &Arc<dyn LocationStore>,
    roots: &Arc<dyn RelocationStore>,
    counts: &Counts,
) -> Runtime {
    let (phoenix, beacon) = phoenix_types(rid, counts);
    start(
        discovered_node(rid, store, quick_lease())
            .relocation_store(roots.clone())
            .actor_type(phoenix)
            .spot_type(beacon),
    )
    .await
}

/// A player node running in a child process (this test binary's `child_entry` test).
pub struct ChildNode {
    pub child: Child,
    pub lines: Lines<BufReader<ChildStdout>>,
    /// The child's owner lease: (owner, generation).
    pub lease: (OwnerId, u64),
}

impl ChildNode {
    /// Starts this test binary's `child_entry` as node `rid` on Redis `url`.
    pub async fn spawn(child_entry: &str, url: &str, rid: &str) -> ChildNode {
        let mut child = Command::new(std::env::current_exe().expect("the test binary"))
            .args([
                child_entry,
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("ZLINK_CHILD_REDIS", url)
            .env("ZLINK_CHILD_RID", rid)
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start the child node");
        let mut lines = BufReader::new(child.stdout.take().expect("its stdout")).lines();
        let lease = tokio::time::timeout(WAIT, async {
            while let Some(line) = lines.next_line().await.expect("the child's stdout") {
                if let Some(lease) = line.strip_prefix("lease ") {
                    let (owner, generation) = lease.split_once(' ').expect("owner and generation");
                    return (
                        OwnerId(owner.to_string()),
                        generation.parse().expect("a generation"),
                    );
                }
            }
            panic!("the child ended before it started");
        })
        .await
        .expect("the child node starts");
        ChildNode {
            child,
            lines,
            lease,
        }
    }

    /// Sends SIGINT (what Ctrl-C sends) and returns the line the child printed after its
    /// shutdown, and its exit status.
    pub async fn interrupt(self) -> (String, std::process::ExitStatus) {
        self.stop_with("INT").await
    }

    /// Sends SIGTERM (what a service manager or Kubernetes sends), as [`interrupt`](Self::interrupt).
    pub async fn terminate(self) -> (String, std::process::ExitStatus) {
        self.stop_with("TERM").await
    }

    async fn stop_with(mut self, signal: &str) -> (String, std::process::ExitStatus) {
        let pid = self.child.id().expect("the child runs");
        let sent = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &pid.to_string()])
            .status()
            .expect("kill");
        assert!(sent.success(), "SIG{signal} sent");
        let said = tokio::time::timeout(WAIT, async {
            while let Some(line) = self.lines.next_line().await.expect("the child's stdout") {
                if let Some(outcome) = line.strip_prefix("shutdown ") {
                    return outcome.to_string();
                }
            }
            String::from("(no shutdown line)")
        })
        .await
        .expect("the child shuts down in time");
        let status = tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("the child exits")
            .expect("its status");
        (said, status)
    }

    /// SIGKILL: the node ends as a crash ends it.
    pub async fn kill(mut self) {
        self.child.start_kill().expect("SIGKILL the child");
        let _ = self.child.wait().await;
    }
}

/// What a child node runs: node `ZLINK_CHILD_RID` on `ZLINK_CHILD_REDIS` until SIGINT or
/// SIGTERM (`Runtime::shutdown_on_signal`, as an application's `main` does), then prints
/// the shutdown's outcome.
pub async fn run_child_player() {
    let url = std::env::var("ZLINK_CHILD_REDIS").expect("ZLINK_CHILD_REDIS");
    let rid = std::env::var("ZLINK_CHILD_RID").expect("ZLINK_CHILD_RID");
    let (store, roots) = redis_stores(&url);
    let probe = Probe::new(Duration::ZERO, false);
    let rt = player_node(&rid, &store, &roots, &probe, &Counts::default()).await;
    let token = rt
        .discovery()
        .owner_lease()
        .and_then(|lease| lease.token)
        .expect("an owner lease");
    let stopping = rt.shutdown_on_signal(zlink::ShutdownOptions::new());
    tokio::pin!(stopping);
    // Polled once: the signal handlers are installed before the parent may send one.
    assert!(futures::poll!(&mut stopping).is_pending());
    // On a line of its own: the harness's "test ... " has no line end yet.
    println!("\nlease {} {}", token.owner.0, token.generation);
    let outcome = stopping.await;
    println!("\nshutdown {outcome:?}");
}

/// `rt`'s owner lease claim now.
pub fn lease_of(rt: &zlink::Handle) -> zlink::store::LeaseToken {
    rt.discovery()
        .owner_lease()
        .and_then(|lease| lease.token)
        .expect("an owner lease")
}

/// Waits until `store` shows the lease claim `owner` expired (or replaced).
pub async fn lease_expired(store: &Arc<dyn LocationStore>, owner: &zlink::store::LeaseToken) {
    zlink_testkit::wait_until(WAIT, "the owner lease expired in the store", || async {
        store
            .read_lease(&owner.owner)
            .await
            .is_ok_and(|grant| grant.is_none_or(|g| g.token.generation != owner.generation))
    })
    .await;
}
