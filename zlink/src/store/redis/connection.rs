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
                let (index, at) = match cursor {
                    None => (0, 0),
                    Some(c) => {
                        let (n, at) = c.split_once(':').ok_or_else(invalid)?;
                        (
                            n.parse().map_err(|_| invalid())?,
                            at.parse().map_err(|_| invalid())?,
                        )
                    }
                };
                let mut conn = Self::cluster(client, connection).await?;
                let masters = masters(&mut conn).await?;
                let Some((host, port)) = masters.get(index).cloned() else {
                    return Ok((Vec::new(), None));
                };
                let by_address = SingleNodeRoutingInfo::ByAddress { host, port };
                let reply = conn
                    .route_command(step(at), RoutingInfo::SingleNode(by_address))
                    .await?;
                let (next, keys): (u64, Vec<String>) = redis::from_redis_value(reply)?;
                let next = match next {
                    0 if index + 1 < masters.len() => Some(format!("{}:0", index + 1)),
                    0 => None,
                    more => Some(format!("{index}:{more}")),
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

/// The cluster's masters that are not failing, as (host, port), sorted.
async fn masters(conn: &mut ClusterConnection) -> RedisResult<Vec<(String, u16)>> {
    let mut cmd = redis::cmd("CLUSTER");
    cmd.arg("NODES");
    let reply = conn
        .route_command(cmd, RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random))
        .await?;
    let text: String = redis::from_redis_value(reply)?;
    let mut masters: Vec<(String, u16)> = text
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(' ');
            let (_, address, flags) = (fields.next()?, fields.next()?, fields.next()?);
            let flags: Vec<&str> = flags.split(',').collect();
            if !flags.contains(&"master") || flags.iter().any(|f| f.starts_with("fail")) {
                return None;
            }
            let (host, port) = address.split(['@', ',']).next()?.rsplit_once(':')?;
            Some((host.to_string(), port.parse().ok()?))
        })
        .filter(|(host, _)| !host.is_empty())
        .collect();
    masters.sort();
    Ok(masters)
}
