//! [`TestCluster`]: N nodes of one mesh in one test, finding each other through a shared
//! Location Store — on the in-memory network with the in-memory store (faults on demand),
//! or on real TCP with a private `redis-server` — with handles to kill or partition a node
//! and to read each node's store counters.

use std::sync::Arc;
use std::time::Duration;
use zlink::TestFaults;

use zlink::store::{
    LocationStore, OwnerLeaseSettings, RedisLocationStore, RedisOptions, RelocationStore,
};
use zlink::{Runtime, RuntimeBuilder};

use crate::{
    wait_until, FaultyLocationStore, LinkFault, MemNetwork, MemoryLocationStore, RedisServer,
};

/// Owner lease timings short enough for tests: renew 200 ms, TTL 1.5 s, renew timeout
/// 300 ms, fencing margin 500 ms.
pub fn quick_lease() -> OwnerLeaseSettings {
    OwnerLeaseSettings {
        renew_interval: Duration::from_millis(200),
        ttl: Duration::from_millis(1500),
        renew_timeout: Duration::from_millis(300),
        fencing_margin: Duration::from_millis(500),
    }
}

/// Where a cluster's nodes run.
enum Fabric {
    Memory(MemNetwork),
    Tcp(RedisServer),
}

/// N nodes of the mesh `"cluster"` named `n0`, `n1`, ….
///
/// ```no_run
/// # async fn demo() -> zlink::Result<()> {
/// use zlink_testkit::TestCluster;
///
/// let mut cluster = TestCluster::on_tcp_with_redis(3, |_, node| node).await;
/// let reads = cluster.store_reads(0);
/// cluster.kill(2).await;
/// cluster.shutdown().await;
/// # Ok(()) }
/// ```
pub struct TestCluster {
    fabric: Fabric,
    store: Arc<dyn LocationStore>,
    /// Each node's own way to the shared store, for faults one node alone sees.
    views: Vec<Arc<FaultyLocationStore>>,
    nodes: Vec<Option<Runtime>>,
}

/// The MeshName of every cluster node.
pub const CLUSTER_MESH: &str = "cluster";

/// How long the cluster waits for its nodes to see each other.
const CONNECT_WAIT: Duration = Duration::from_secs(10);

fn rid(i: usize) -> String {
    format!("n{i}")
}

impl TestCluster {
    /// `count` nodes on the in-memory network with the in-memory store; `configure` adds
    /// each node's roles (Spot types, channels) to its builder.
    pub async fn in_memory(
        count: usize,
        configure: impl Fn(usize, RuntimeBuilder) -> RuntimeBuilder,
    ) -> TestCluster {
        let net = MemNetwork::new();
        let store: Arc<dyn LocationStore> = Arc::new(MemoryLocationStore::new());
        let mut nodes = Vec::with_capacity(count);
        let views = views(&store, count);
        for (i, view) in views.iter().enumerate() {
            let name = rid(i);
            let builder = base(&name, view)
                .listen(format!("mem://{name}:1"))
                .transport(net.host(&name))
                .test_liveness(Duration::from_millis(50), Duration::from_millis(300));
            nodes.push(Some(start(configure(i, builder)).await));
        }
        let cluster = TestCluster {
            fabric: Fabric::Memory(net),
            store,
            views,
            nodes,
        };
        cluster.wait_connected().await;
        cluster
    }

    /// `count` nodes on real TCP (127.0.0.1) sharing a private `redis-server`.
    pub async fn on_tcp_with_redis(
        count: usize,
        configure: impl Fn(usize, RuntimeBuilder) -> RuntimeBuilder,
    ) -> TestCluster {
        let redis = RedisServer::start().expect("redis-server (install it, or use in_memory)");
        let options =
            RedisOptions::new(redis.url(), "cluster").operation_timeout(Duration::from_millis(500));
        let store: Arc<dyn LocationStore> =
            Arc::new(RedisLocationStore::new(options).expect("valid Redis options"));
        let mut nodes = Vec::with_capacity(count);
        let views = views(&store, count);
        for (i, view) in views.iter().enumerate() {
            let builder = base(&rid(i), view).listen("tcp://127.0.0.1:0");
            nodes.push(Some(start(configure(i, builder)).await));
        }
        let cluster = TestCluster {
            fabric: Fabric::Tcp(redis),
            store,
            views,
            nodes,
        };
        cluster.wait_connected().await;
        cluster
    }

    async fn wait_connected(&self) {
        let want = self.nodes.len().saturating_sub(1);
        for node in self.nodes.iter().flatten() {
            wait_until(
                CONNECT_WAIT,
                &format!("{} sees the other {want} nodes", node.rid()),
                || async { node.nodes().peers().len() == want },
            )
            .await;
        }
    }

    /// Node `i`. Panics if it was killed.
    pub fn node(&self, i: usize) -> &Runtime {
        self.nodes
            .get(i)
            .and_then(Option::as_ref)
            .unwrap_or_else(|| panic!("node n{i} is not running"))
    }

    /// How many nodes the cluster started with.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the cluster has no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The `redis-server` behind the store of a TCP cluster (to pause or stop it).
    pub fn redis(&self) -> Option<&RedisServer> {
        match &self.fabric {
            Fabric::Tcp(redis) => Some(redis),
            Fabric::Memory(_) => None,
        }
    }

    /// The store every node shares.
    pub fn store(&self) -> &Arc<dyn LocationStore> {
        &self.store
    }

    /// Node `i`'s own way to the shared store: set faults on it (`set_down`, delays) that
    /// node `i` alone sees, as when one node loses its network to the store.
    pub fn store_of(&self, i: usize) -> &FaultyLocationStore {
        &self.views[i]
    }

    /// Record reads node `i` made in the Location Store so far (object authority reads:
    /// what a route-cache miss costs).
    pub fn store_reads(&self, i: usize) -> u64 {
        self.node(i)
            .status()
            .store_operations
            .map_or(0, |s| s.reads.record.calls)
    }

    /// Kills node `i` as a crash would: nothing is withdrawn from the store, its lease
    /// runs out by itself.
    pub async fn kill(&mut self, i: usize) {
        if let Some(node) = self.nodes.get_mut(i).and_then(Option::take) {
            node.crash().await;
        }
    }

    /// Cuts node `a` off from node `b` in both directions (in-memory network only): each
    /// side's traffic to the other vanishes without a close.
    pub fn partition(&self, a: usize, b: usize) {
        let Fabric::Memory(net) = &self.fabric else {
            panic!("partition needs the in-memory network (TestCluster::in_memory)");
        };
        net.set_fault(&rid(a), &rid(b), LinkFault::Drop);
        net.set_fault(&rid(b), &rid(a), LinkFault::Drop);
    }

    /// Heals a [`partition`](Self::partition).
    pub fn heal(&self, a: usize, b: usize) {
        if let Fabric::Memory(net) = &self.fabric {
            net.clear_fault(&rid(a), &rid(b));
            net.clear_fault(&rid(b), &rid(a));
        }
    }

    /// Shuts every running node down.
    pub async fn shutdown(mut self) {
        for node in self.nodes.iter_mut().rev().filter_map(Option::take) {
            node.shutdown().await;
        }
    }
}

/// The Relocation Store of every cluster of this process (references are unique, so
/// clusters never meet in it).
fn relocation_store() -> Arc<dyn RelocationStore> {
    static STORE: std::sync::OnceLock<Arc<dyn RelocationStore>> = std::sync::OnceLock::new();
    STORE.get_or_init(<dyn RelocationStore>::in_memory).clone()
}

/// One fault-free view of `store` per node.
fn views(store: &Arc<dyn LocationStore>, count: usize) -> Vec<Arc<FaultyLocationStore>> {
    (0..count)
        .map(|_| Arc::new(FaultyLocationStore::new(store.clone())))
        .collect()
}

fn base(rid: &str, store: &Arc<FaultyLocationStore>) -> RuntimeBuilder {
    Runtime::builder()
        .mesh_name(CLUSTER_MESH)
        .rid(rid)
        .location_store(store.clone())
        .relocation_store(relocation_store())
        .owner_lease(quick_lease())
        .discovery_interval(Duration::from_millis(50))
}

async fn start(builder: RuntimeBuilder) -> Runtime {
    builder
        .build()
        .expect("valid cluster node settings")
        .start()
        .await
        .expect("the cluster node starts")
}
