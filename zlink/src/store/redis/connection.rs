//! One reconnecting connection to a single Redis or to a Redis Cluster, made lazily so a
//! node can start while Redis is down.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::{ClusterClient, ClusterClientBuilder};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{RedisResult, ScriptInvocation, Value};
use tokio::sync::OnceCell;

use super::options::RedisTarget;

/// A connection the provider sends every call over.
pub(super) enum Connection {
    /// One server: the manager reconnects after failures.
    Single(ConnectionManager),
    /// A cluster: the client follows MOVED/ASK and refreshes its slot map after a
    /// failover; it is connected on first use (and again after a failed first use).
    Cluster {
        client: Box<ClusterClient>,
        connection: OnceCell<ClusterConnection>,
    },
}

/// Whether the cluster client may send a command again after an I/O error or a lost
/// answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Resend {
    /// Reads: sending again is harmless.
    Allowed,
    /// Changes: a script whose answer was lost may have run; running it again would turn
    /// its own effect into a conflict (a claim that finds its own lease, a batch that finds
    /// its own write). Its caller hears `OutcomeUnknown` and re-reads instead.
    Never,
}

impl Connection {
    /// Prepares a connection to `target`; contacts nobody.
    pub(super) fn open(
        target: &RedisTarget,
        timeout: Duration,
        resend: Resend,
    ) -> crate::Result<Self> {
        let invalid = |what: &str, e: redis::RedisError| {
            crate::Error::InvalidArgument(format!("Redis {what}: {e}"))
        };
        match target {
            RedisTarget::Single(url) => {
                let client = redis::Client::open(url.as_str())
                    .map_err(|e| invalid(&format!("url {url:?}"), e))?;
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(timeout))
                    .set_response_timeout(Some(timeout))
                    .set_number_of_retries(1)
                    .set_max_delay(Duration::from_millis(500));
                let manager = ConnectionManager::new_lazy_with_config(client, config)
                    .map_err(|e| invalid("connection", e))?;
                Ok(Connection::Single(manager))
            }
            RedisTarget::Cluster(seeds) => {
                let client = ClusterClientBuilder::new(seeds.iter().map(String::as_str))
                    .connection_timeout(timeout)
                    .response_timeout(timeout)
                    .retries(match resend {
                        Resend::Allowed => 3,
                        Resend::Never => 0,
                    })
                    .max_retry_wait(500)
                    .build()
                    .map_err(|e| invalid(&format!("cluster seeds {seeds:?}"), e))?;
                Ok(Connection::Cluster {
                    client: Box::new(client),
                    connection: OnceCell::new(),
                })
            }
        }
    }

    async fn cluster(
        client: &ClusterClient,
        connection: &OnceCell<ClusterConnection>,
    ) -> RedisResult<ClusterConnection> {
        connection
            .get_or_try_init(|| client.get_async_connection())
            .await
            .cloned()
    }

    /// Runs a script. On a cluster it goes to the master of its first key's slot (every
    /// key of one script shares that slot).
    pub(super) async fn eval(&self, call: &ScriptInvocation<'_>) -> RedisResult<Value> {
        match self {
            Connection::Single(manager) => call.invoke_async(&mut manager.clone()).await,
            Connection::Cluster { client, connection } => {
                let mut conn = Self::cluster(client, connection).await?;
                call.invoke_async(&mut conn).await
            }
        }
    }

    /// Reads string keys (`MGET`: one round trip on one server; on a cluster the client
    /// splits it per slot and puts the answers back in order).
    pub(super) async fn get_many(&self, keys: &[String]) -> RedisResult<Value> {
        let mut cmd = redis::cmd("MGET");
        cmd.arg(keys);
        match self {
            Connection::Single(manager) => cmd.query_async(&mut manager.clone()).await,
            Connection::Cluster { client, connection } => {
                let mut conn = Self::cluster(client, connection).await?;
                cmd.query_async(&mut conn).await
            }
        }
    }

    /// One `SCAN` step for keys matching `pattern`, about `count` keys: on one server from
    /// `cursor`; on a cluster, `<n>:<cursor>` walks master `n` of the masters sorted by
    /// address, then the next one. Returns the keys and the next cursor (`None` at the end).
    pub(super) async fn scan(
        &self,
        pattern: &str,
        cursor: Option<&str>,
        count: usize,
    ) -> RedisResult<(Vec<String>, Option<String>)> {
        let step = |at: u64| {
            let mut cmd = redis::cmd("SCAN");
            cmd.arg(at)
                .arg("MATCH")
                .arg(pattern)
                .arg("COUNT")
                .arg(count);
            cmd
        };
        let invalid = || {
            redis::RedisError::from((redis::ErrorKind::Client, "not a scan cursor of this store"))
        };
        match self {
            Connection::Single(manager) => {
                let at = cursor.map_or(Ok(0), |c| c.parse().map_err(|_| invalid()))?;
                let (next, keys): (u64, Vec<String>) =
                    step(at).query_async(&mut manager.clone()).await?;
                Ok((keys, (next != 0).then(|| next.to_string())))
            }
            Connection::Cluster { client, connection } => {
                let mut conn = Self::cluster(client, connection).await?;
                let masters = slot_masters(&mut conn).await?;
                let (index, at) = match cursor {
                    None => (0, 0),
                    Some(c) => {
                        let (id, at) = c.split_once(':').ok_or_else(invalid)?;
                        let index = masters
                            .iter()
                            .position(|m| m.id == id)
                            .ok_or_else(masters_changed)?;
                        (index, at.parse().map_err(|_| invalid())?)
                    }
                };
                let Some(master) = masters.get(index) else {
                    return Ok((Vec::new(), None));
                };
                let by_address = SingleNodeRoutingInfo::ByAddress {
                    host: master.host.clone(),
                    port: master.port,
                };
                let reply = conn
                    .route_command(step(at), RoutingInfo::SingleNode(by_address))
                    .await?;
                let (next, keys): (u64, Vec<String>) = redis::from_redis_value(reply)?;
                let next = match (next, masters.get(index + 1)) {
                    (0, Some(following)) => Some(format!("{}:0", following.id)),
                    (0, None) => None,
                    (more, _) => Some(format!("{}:{more}", master.id)),
                };
                Ok((keys, next))
            }
        }
    }

    /// `WAIT replicas timeout` on the connection (or, on a cluster, the master of `key`'s
    /// slot) that just wrote: how many replicas acknowledged every earlier write of it.
    pub(super) async fn wait_for_replicas(
        &self,
        key: &str,
        replicas: u32,
        timeout: Duration,
    ) -> RedisResult<Value> {
        let mut cmd = redis::cmd("WAIT");
        cmd.arg(replicas).arg(
            u64::try_from(timeout.as_millis())
                .unwrap_or(u64::MAX)
                .max(1),
        );
        match self {
            Connection::Single(manager) => cmd.query_async(&mut manager.clone()).await,
            Connection::Cluster { client, connection } => {
                let mut conn = Self::cluster(client, connection).await?;
                let master = Route::with_key(key, SlotAddr::Master);
                conn.route_command(
                    cmd,
                    RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(master)),
                )
                .await
            }
        }
    }
}

/// A master that owns slots, as the cluster client knows it.
struct SlotMaster {
    id: String,
    host: String,
    port: u16,
}

/// A scan cursor names a master that no longer owns slots: its keys moved, so the scan
/// could miss some. The caller starts again.
fn masters_changed() -> redis::RedisError {
    redis::RedisError::from((
        redis::ErrorKind::Server(redis::ServerErrorKind::TryAgain),
        "the cluster's masters changed during the scan; scan again from the start",
    ))
}

/// The masters that own slots now (`CLUSTER SLOTS`, the map the client routes by),
/// sorted by node id: a scan cursor names its master by id, so a failover or a
/// resharding between two pages is noticed, never silently skipped.
async fn slot_masters(conn: &mut ClusterConnection) -> RedisResult<Vec<SlotMaster>> {
    let mut cmd = redis::cmd("CLUSTER");
    cmd.arg("SLOTS");
    let reply = conn
        .route_command(cmd, RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random))
        .await?;
    let ranges: Vec<Vec<Value>> = redis::from_redis_value(reply)?;
    let mut masters = std::collections::BTreeMap::new();
    for range in ranges {
        let Some(master) = range.into_iter().nth(2) else {
            continue;
        };
        let fields: Vec<Value> = redis::from_redis_value(master)?;
        let field = |i: usize| fields.get(i).cloned().unwrap_or(Value::Nil);
        let host: String = redis::from_redis_value(field(0))?;
        let port: u16 = redis::from_redis_value(field(1))?;
        let id: String = redis::from_redis_value(field(2))?;
        masters.insert(id.clone(), SlotMaster { id, host, port });
    }
    Ok(masters.into_values().collect())
}
