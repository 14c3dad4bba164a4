//! [`RedisOptions`]: where the Redis Location Store lives and how it is used.

use std::time::Duration;

/// Which Redis deployment the store talks to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedisTarget {
    /// One server (with or without replicas behind it), e.g. `redis://127.0.0.1:6379/` or
    /// `redis+unix:///run/redis.sock`.
    Single(String),
    /// A Redis Cluster, reached through any of these seed nodes (`redis://host:port/`).
    /// Redirections (MOVED, ASK) and slot-map changes after a failover are followed.
    Cluster(Vec<String>),
}

/// How authority writes wait for replicas before they count as applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaWait {
    /// Replicas that must acknowledge the write (`WAIT` numreplicas, >= 1).
    pub replicas: u32,
    /// How long to wait for them (> 0, below the operation timeout).
    pub timeout: Duration,
}

/// Settings of the Redis provider.
#[derive(Debug, Clone)]
pub struct RedisOptions {
    /// The deployment.
    pub target: RedisTarget,
    /// Prefix of every key (required, no `{` or `}`); give each application or store its own.
    pub key_prefix: String,
    /// The longest one store call may take (default 5 s).
    pub operation_timeout: Duration,
    /// When set, every authority write (`apply`, `next_generation`) waits for this many
    /// replicas; off by default. See [`RedisOptions::wait_for_replicas`].
    pub replica_wait: Option<ReplicaWait>,
}

impl RedisOptions {
    /// Options for one server at `url` with `key_prefix` and the default 5 s operation
    /// timeout.
    pub fn new(url: impl Into<String>, key_prefix: impl Into<String>) -> Self {
        Self::with_target(RedisTarget::Single(url.into()), key_prefix)
    }

    /// Options for a Redis Cluster reached through `seeds` (any subset of its nodes).
    pub fn cluster<S: Into<String>>(
        seeds: impl IntoIterator<Item = S>,
        key_prefix: impl Into<String>,
    ) -> Self {
        let seeds = seeds.into_iter().map(Into::into).collect();
        Self::with_target(RedisTarget::Cluster(seeds), key_prefix)
    }

    fn with_target(target: RedisTarget, key_prefix: impl Into<String>) -> Self {
        RedisOptions {
            target,
            key_prefix: key_prefix.into(),
            operation_timeout: Duration::from_secs(5),
            replica_wait: None,
        }
    }

    /// Sets the operation timeout (> 0).
    pub fn operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = timeout;
        self
    }

    /// Makes every authority write (`apply` and `next_generation`) wait until `replicas`
    /// replicas acknowledged it (Redis `WAIT`), for at most `timeout`. A write the
    /// replicas did not acknowledge in time was applied on the primary but may be lost by
    /// a failover: it fails [`NotReplicated`](crate::store::StoreError::NotReplicated)
    /// and does not count as applied. Lease renewals and descriptors never wait.
    pub fn wait_for_replicas(mut self, replicas: u32, timeout: Duration) -> Self {
        self.replica_wait = Some(ReplicaWait { replicas, timeout });
        self
    }

    /// Every problem with these options, in one message.
    pub(crate) fn validate(&self) -> crate::Result<()> {
        let mut problems = Vec::new();
        if self.key_prefix.is_empty() || self.key_prefix.contains(['{', '}']) {
            problems.push("the Redis key prefix must be non-empty and contain no braces".into());
        }
        if self.operation_timeout.is_zero() {
            problems.push("the Redis operation timeout must be greater than zero".into());
        }
        match &self.target {
            RedisTarget::Single(url) if url.is_empty() => {
                problems.push("the Redis url is empty".to_string())
            }
            RedisTarget::Cluster(seeds) if seeds.is_empty() => {
                problems.push("a Redis Cluster needs at least one seed node".to_string())
            }
            _ => {}
        }
        if let Some(wait) = self.replica_wait {
            if wait.replicas == 0 {
                problems.push("waiting for 0 replicas: leave the option off instead".into());
            }
            if wait.timeout.is_zero() || wait.timeout >= self.operation_timeout {
                problems.push(format!(
                    "the replica wait ({:?}) must be above zero and below the operation timeout ({:?})",
                    wait.timeout, self.operation_timeout
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(crate::Error::InvalidArgument(problems.join("; ")))
        }
    }
}
