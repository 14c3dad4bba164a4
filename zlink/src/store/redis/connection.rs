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
