//! An Instance Spot that moves with its state (`relocation = preserve`), for the tests of
//! activation under races, crashes and moves: a duel, whose log records every message it
//! ran once, and a probe that tells a test where each activation of a node stands.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{broadcast, Semaphore};
use zlink::object::{RelocationState, Spot, SpotContext};
use zlink::Runtime;

pub use crate::instance_matches::{Log, Mark, Score};
use crate::{discovered_node, quick_lease, start};

/// The permits of a probe's handler gate: taking them all holds every duel handler.
pub const PERMITS: u32 = 1 << 20;

/// Where one node's duels are: what a test (or a parent process) watches.
pub struct Probe {
    /// Factory runs, by duel ID.
    built: Mutex<HashMap<String, usize>>,
    /// How often each `(stage, id)` was reached.
    reached: Mutex<HashMap<(&'static str, String), usize>>,
    /// `(stage, id)` as each activation reaches it: `init` (`on_initialize` begins),
    /// `initialized` (it ended), `turn` (any handler begins), `first` (the first handler
    /// begins).
    stages: broadcast::Sender<(&'static str, String)>,
    /// Each handler takes a permit first: a test holds them to pause handlers.
    pub gate: Arc<Semaphore>,
    /// How long `on_initialize` takes.
    pub init_delay: Duration,
    /// Whether each stage is printed to stdout as `<stage> <id>` (a child process).
    pub print: bool,
}

impl Probe {
    pub fn new(init_delay: Duration, print: bool) -> Arc<Probe> {
        Arc::new(Probe {
            built: Mutex::new(HashMap::new()),
            reached: Mutex::new(HashMap::new()),
            stages: broadcast::channel(4096).0,
            gate: Arc::new(Semaphore::new(PERMITS as usize)),
            init_delay,
            print,
        })
    }

    /// The stages reached from now on.
    pub fn stages(&self) -> broadcast::Receiver<(&'static str, String)> {
        self.stages.subscribe()
    }

    /// How many duels `id` this node built.
    pub fn built(&self, id: &str) -> usize {
        self.built.lock().unwrap().get(id).copied().unwrap_or(0)
    }

    /// How many duels this node built, all IDs together.
    pub fn built_total(&self) -> usize {
        self.built.lock().unwrap().values().sum()
    }

    /// How often duel `id` reached `stage` on this node.
    pub fn count(&self, stage: &'static str, id: &str) -> usize {
        let reached = self.reached.lock().unwrap();
        reached.get(&(stage, id.to_string())).copied().unwrap_or(0)
    }

    fn reached(&self, stage: &'static str, id: &str) {
        *self
            .reached
            .lock()
            .unwrap()
            .entry((stage, id.to_string()))
            .or_default() += 1;
        if self.print {
            println!("{stage} {id}");
        }
        let _ = self.stages.send((stage, id.to_string()));
    }
}

/// A duel: an Instance Spot whose log keeps every message it ran, and moves with it.
pub struct Duel {
    id: String,
    log: Vec<String>,
    probe: Arc<Probe>,
}

impl Duel {
    async fn turn(&mut self, by: String) {
        self.probe.reached("turn", &self.id);
        if self.log.is_empty() {
            self.probe.reached("first", &self.id);
        }
        let _turn = self.probe.gate.acquire().await;
        self.log.push(by);
    }
}

impl RelocationState for Duel {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        serde_json::to_vec(&self.log).map_err(|e| zlink::Error::InvalidArgument(e.to_string()))
    }

    fn restore(&mut self, state: &[u8]) -> zlink::Result<()> {
        self.log = serde_json::from_slice(state)
            .map_err(|e| zlink::Error::InvalidArgument(e.to_string()))?;
        Ok(())
    }
}

#[zlink::spot(type = "duel", relocation = preserve, instance)]
impl Duel {
    #[handler]
    async fn score(&mut self, score: Score, _ctx: &SpotContext) -> zlink::Result<Log> {
        self.turn(score.by).await;
        Ok(Log(self.log.clone()))
    }

    #[handler]
    async fn mark(&mut self, mark: Mark, _ctx: &SpotContext) -> zlink::Result<()> {
        self.turn(mark.by).await;
        Ok(())
    }
}

#[zlink::async_trait]
impl Spot for Duel {
    async fn on_initialize(&mut self, _ctx: &SpotContext) -> zlink::Result<()> {
        self.probe.reached("init", &self.id);
        tokio::time::sleep(self.probe.init_delay).await;
        self.probe.reached("initialized", &self.id);
        Ok(())
    }
}

/// The duel type as a node with `probe` builds it.
pub fn duel_type(probe: &Arc<Probe>) -> zlink::object::SpotType {
    let probe = probe.clone();
    Duel::spot_type(move |ctx| {
        let id = ctx.id().to_string();
        *probe.built.lock().unwrap().entry(id.clone()).or_default() += 1;
        Duel {
            id,
            log: Vec::new(),
            probe: probe.clone(),
        }
    })
    .expect("a valid Spot type")
}

/// Node `rid` on `store` and the shared Relocation Store `roots`, serving duels (watched
/// by `probe`) or, without one, nothing.
pub async fn duel_node(
    rid: &str,
    store: &Arc<dyn zlink::store::LocationStore>,
    roots: &Arc<dyn zlink::store::RelocationStore>,
    probe: Option<&Arc<Probe>>,
) -> Runtime {
    let mut builder = discovered_node(rid, store, quick_lease()).relocation_store(roots.clone());
    if let Some(probe) = probe {
        builder = builder.spot_type(duel_type(probe));
    }
    start(builder).await
}
