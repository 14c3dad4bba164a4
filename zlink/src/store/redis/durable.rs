//! Authority writes that wait for replicas: each runs on a connection of its own, taken
//! from a small pool, because `WAIT` blocks the connection it is sent on and counts only
//! that connection's writes.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};

use super::connection::{Connection, Resend};
use super::options::{RedisTarget, ReplicaWait};
use crate::store::{StoreError, StoreResult};
use crate::sync::LockUnpoisoned;

/// How many authority writes may wait for replicas at once; more queue for a connection.
const MAX_WAITING_WRITES: usize = 8;

/// The pool of connections authority writes run on when they wait for replicas.
pub(super) struct DurableWrites {
    wait: ReplicaWait,
    target: RedisTarget,
    timeout: Duration,
    idle: Mutex<Vec<Connection>>,
    permits: Semaphore,
}

/// One connection taken from the pool; it goes back when dropped.
pub(super) struct DurableConnection<'a> {
    pool: &'a DurableWrites,
    connection: Option<Connection>,
    _permit: SemaphorePermit<'a>,
}

impl DurableWrites {
    pub(super) fn new(target: RedisTarget, timeout: Duration, wait: ReplicaWait) -> Self {
        DurableWrites {
            wait,
            target,
            timeout,
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(MAX_WAITING_WRITES),
        }
    }

    /// How many replicas to wait for, and how long.
    pub(super) fn wait(&self) -> ReplicaWait {
        self.wait
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Connection>> {
        self.idle.lock_unpoisoned()
    }

    /// A connection no other write is using (made on first need).
    pub(super) async fn take(&self) -> StoreResult<DurableConnection<'_>> {
        let permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| StoreError::Unavailable("the store is closing".into()))?;
        let connection = match self.idle().pop() {
            Some(connection) => connection,
            None => Connection::open(&self.target, self.timeout, Resend::Never)
                .map_err(|e| StoreError::Unavailable(e.to_string()))?,
        };
        Ok(DurableConnection {
            pool: self,
            connection: Some(connection),
            _permit: permit,
        })
    }
}

impl std::ops::Deref for DurableConnection<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        // Always Some until dropped.
        self.connection
            .as_ref()
            .unwrap_or_else(|| unreachable!("a taken connection is held until drop"))
    }
}

impl Drop for DurableConnection<'_> {
    fn drop(&mut self) {
        if let Some(connection) = self.connection.take() {
            self.pool.idle().push(connection);
        }
    }
}
