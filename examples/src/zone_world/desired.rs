//! Which zone nodes the operators put under maintenance: desired state, kept where it
//! outlives any node. On Redis it is a set next to the Location Store's keys, so a zone
//! node that restarts reads it before it admits anyone; embedded (one process) it is a set
//! in memory that every node of the process shares.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use zlink::{Error, ErrorKind};

/// Where the maintenance settings live.
#[derive(Clone)]
pub enum MaintenanceBook {
    /// In this process only (the embedded one-process world).
    Memory(Arc<Mutex<BTreeSet<String>>>),
    /// A Redis set.
    Redis {
        /// The connection (reconnects by itself).
        connection: ConnectionManager,
        /// The set's key.
        key: String,
    },
}

impl MaintenanceBook {
    /// A book in this process's memory.
    pub fn in_memory() -> MaintenanceBook {
        MaintenanceBook::Memory(Arc::default())
    }

    /// The book of world `world` on the Redis at `url` (key `zone-world:{world}:maintenance`).
    pub async fn on_redis(url: &str, world: &str) -> zlink::Result<MaintenanceBook> {
        let client = redis::Client::open(url)
            .map_err(|e| Error::InvalidArgument(format!("Redis url {url:?}: {e}")))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(2)))
            .set_response_timeout(Some(Duration::from_secs(2)));
        let connection = ConnectionManager::new_with_config(client, config)
            .await
            .map_err(unavailable)?;
        Ok(MaintenanceBook::Redis {
            connection,
            key: format!("zone-world:{world}:maintenance"),
        })
    }

    /// Puts node `rid` under maintenance, or takes it out.
    pub async fn set(&self, rid: &str, on: bool) -> zlink::Result<()> {
        match self {
            MaintenanceBook::Memory(nodes) => {
                let mut nodes = nodes.lock().unwrap_or_else(PoisonError::into_inner);
                if on {
                    nodes.insert(rid.to_string());
                } else {
                    nodes.remove(rid);
                }
                Ok(())
            }
            MaintenanceBook::Redis { connection, key } => {
                let command = if on { "SADD" } else { "SREM" };
                redis::cmd(command)
                    .arg(key)
                    .arg(rid)
                    .query_async::<i64>(&mut connection.clone())
                    .await
                    .map(drop)
                    .map_err(unavailable)
            }
        }
    }

    /// The nodes under maintenance, sorted.
    pub async fn nodes(&self) -> zlink::Result<Vec<String>> {
        match self {
            MaintenanceBook::Memory(nodes) => {
                let nodes = nodes.lock().unwrap_or_else(PoisonError::into_inner);
                Ok(nodes.iter().cloned().collect())
            }
            MaintenanceBook::Redis { connection, key } => {
                let mut nodes: Vec<String> = redis::cmd("SMEMBERS")
                    .arg(key)
                    .query_async(&mut connection.clone())
                    .await
                    .map_err(unavailable)?;
                nodes.sort();
                Ok(nodes)
            }
        }
    }

    /// Whether node `rid` is under maintenance.
    pub async fn is_on(&self, rid: &str) -> zlink::Result<bool> {
        Ok(self.nodes().await?.iter().any(|node| node == rid))
    }
}

fn unavailable(e: redis::RedisError) -> Error {
    Error::new(
        ErrorKind::Unavailable,
        format!("the maintenance settings could not be read or written on Redis: {e}"),
    )
}
