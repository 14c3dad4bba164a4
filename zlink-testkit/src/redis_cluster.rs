//! [`RedisCluster`]: a private Redis Cluster for one test, of `redis-server` processes on
//! free ports of 127.0.0.1, whose masters the test can kill to watch a replica take over.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::redis_server::{info_field, RedisServer};

/// How long [`RedisCluster::start`] may take, `redis-cli --cluster create` included.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// How long one health query may wait for a node's reply.
const QUERY_TIMEOUT: Duration = Duration::from_secs(1);

/// The number of hash slots of every Redis Cluster.
const SLOTS: usize = 16384;

/// Makes every private directory name unique within this process.
static NEXT_DIR: AtomicU64 = AtomicU64::new(0);

/// A Redis Cluster of `redis-server` processes, each a [`RedisServer`] that can be
/// paused, resumed or stopped on its own. Every process is killed and the private
/// directory holding their cluster config files removed when dropped.
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
    seed_ports: Vec<u16>,
    dir: PathBuf,
}

impl RedisCluster {
    /// `cluster-node-timeout` of every node: a master unreachable this long is marked
    /// failing, and one of its replicas takes over about a second later.
    pub const NODE_TIMEOUT: Duration = Duration::from_millis(1000);

    /// Starts `masters * (1 + replicas_per_master)` cluster nodes without persistence,
    /// joins them with `redis-cli --cluster create` (each master gets
    /// `replicas_per_master` replicas and an equal share of the 16384 slots) and returns
    /// once every node reports `cluster_state:ok`, sees all slots served by live masters
    /// and, for a replica, `master_link_status:up` (within 20 s).
    ///
    /// Redis Cluster needs at least 3 masters. Fails with a clear message when
    /// `redis-server` or `redis-cli` is not installed.
    pub fn start(masters: usize, replicas_per_master: usize) -> std::io::Result<RedisCluster> {
        if masters < 3 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("a Redis Cluster needs at least 3 masters, not {masters}"),
            ));
        }
        let started = Instant::now();
        let count = masters * (1 + replicas_per_master);
        // Dropping a half-built cluster on an error cleans up what was started.
        let mut cluster = RedisCluster {
            nodes: Vec::with_capacity(count),
            seed_ports: Vec::new(),
            dir: private_dir()?,
        };
        let dir = cluster.dir.clone();
        for _ in 0..count {
            let node = RedisServer::start_with(free_cluster_port, &|port| node_args(&dir, port))?;
            cluster.nodes.push(node);
        }
        cluster.create(replicas_per_master, started + START_TIMEOUT)?;
        cluster.wait_healthy_until(started + START_TIMEOUT, START_TIMEOUT)?;
        cluster.seed_ports = cluster.master_ports()?;
        Ok(cluster)
    }

    /// The URLs (`redis://127.0.0.1:<port>/`) of the masters at start, in slot order:
    /// the first serves slot 0. Unlike [`RedisCluster::master_ports`] this does not
    /// change when a replica takes over.
    pub fn seed_urls(&self) -> Vec<String> {
        self.seed_ports
            .iter()
            .map(|port| format!("redis://127.0.0.1:{port}/"))
            .collect()
    }

    /// Every node, masters and replicas, in the order they were started; stopped ones too.
    /// [`RedisServer::restart`] brings a node back empty but with its cluster config file,
    /// so it rejoins under its node ID (a killed master whose replica took over comes back
    /// as that replica's replica).
    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    /// The node listening on `port`, if it is one of this cluster's.
    pub fn node_on_port(&self, port: u16) -> Option<&RedisServer> {
        self.nodes.iter().find(|node| node.port() == port)
    }

    /// The ports of the current masters that serve slots, in slot order (the first serves
    /// slot 0), as `CLUSTER NODES` of the first live node that answers shows them; a master
    /// it flags as failing, or whose process is gone, is left out. Fails when no node
    /// answers.
    pub fn master_ports(&self) -> std::io::Result<Vec<u16>> {
        let running = self.running_ports();
        let mut last = None;
        for node in self
            .nodes
            .iter()
            .filter(|node| running.contains(&node.port()))
        {
            match node.bulk_command(&["CLUSTER", "NODES"], QUERY_TIMEOUT) {
                Ok(text) => {
                    let mut masters: Vec<(u16, u16)> = parse_nodes(&text)
                        .into_iter()
                        .filter(|entry| {
                            entry.is_master()
                                && !entry.is_failing()
                                && running.contains(&entry.port)
                        })
                        .filter_map(|entry| Some((entry.first_slot()?, entry.port)))
                        .collect();
                    masters.sort_unstable();
                    return Ok(masters.into_iter().map(|(_, port)| port).collect());
                }
                Err(e) => last = Some(e),
            }
        }
        Err(std::io::Error::other(format!(
            "no node of the cluster answered CLUSTER NODES (last: {})",
            last.map_or_else(|| "no node is running".to_string(), |e| e.to_string())
        )))
    }

    /// Kills (SIGKILL) the master at `index` of [`RedisCluster::master_ports`] and returns
    /// its port. A replica of it takes over after about [`RedisCluster::NODE_TIMEOUT`] plus
    /// a second; [`RedisCluster::wait_until_healthy`] waits for that.
    pub fn kill_master(&self, index: usize) -> std::io::Result<u16> {
        let masters = self.master_ports()?;
        let port = *masters.get(index).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "no master at index {index}: the cluster has {} ({masters:?})",
                    masters.len()
                ),
            )
        })?;
        let node = self.node_on_port(port).ok_or_else(|| {
            std::io::Error::other(format!(
                "master on port {port} is not a node of this cluster"
            ))
        })?;
        node.stop();
        Ok(port)
    }

    /// Waits until every live node reports `cluster_state:ok`, lists every other live node
    /// as healthy, sees all 16384 slots served by live masters (so a replica has taken over
    /// from a killed master) and, for a replica, `master_link_status:up`. Fails after
    /// `timeout` with what was still wrong.
    pub fn wait_until_healthy(&self, timeout: Duration) -> std::io::Result<()> {
        self.wait_healthy_until(Instant::now() + timeout, timeout)
    }

    fn wait_healthy_until(&self, deadline: Instant, timeout: Duration) -> std::io::Result<()> {
        loop {
            let problem = match self.health_problem(deadline) {
                None => return Ok(()),
                Some(problem) => problem,
            };
            if Instant::now() >= deadline {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("redis cluster not healthy within {timeout:?}: {problem}"),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What keeps the cluster from being healthy, or `None` when it is.
    fn health_problem(&self, deadline: Instant) -> Option<String> {
        let running = self.running_ports();
        if running.is_empty() {
            return Some("no node is running".to_string());
        }
        for node in self
            .nodes
            .iter()
            .filter(|node| running.contains(&node.port()))
        {
            let port = node.port();
            let timeout = deadline
                .saturating_duration_since(Instant::now())
                .clamp(Duration::from_millis(100), QUERY_TIMEOUT);
            let query = |args: &[&str]| node.bulk_command(args, timeout);
            let info = match query(&["CLUSTER", "INFO"]) {
                Ok(info) => info,
                Err(e) => return Some(format!("CLUSTER INFO on port {port}: {e}")),
            };
            let state = info_field(&info, "cluster_state");
            let slots_ok = info_field(&info, "cluster_slots_ok");
            if state != Some("ok") || slots_ok != Some("16384") {
                return Some(format!(
                    "port {port} reports cluster_state:{} cluster_slots_ok:{}",
                    state.unwrap_or("missing"),
                    slots_ok.unwrap_or("missing")
                ));
            }
            let view = match query(&["CLUSTER", "NODES"]) {
                Ok(text) => parse_nodes(&text),
                Err(e) => return Some(format!("CLUSTER NODES on port {port}: {e}")),
            };
            for other in &running {
                if !view
                    .iter()
                    .any(|entry| entry.port == *other && !entry.is_failing())
                {
                    return Some(format!("port {port} does not see port {other} as healthy"));
                }
            }
            let served: usize = view
                .iter()
                .filter(|entry| {
                    entry.is_master() && !entry.is_failing() && running.contains(&entry.port)
                })
                .map(NodeEntry::slot_count)
                .sum();
            if served != SLOTS {
                return Some(format!(
                    "port {port} sees {served} of {SLOTS} slots served by live masters"
                ));
            }
            let replication = match query(&["INFO", "replication"]) {
                Ok(text) => text,
                Err(e) => return Some(format!("INFO replication on port {port}: {e}")),
            };
            if info_field(&replication, "role") == Some("slave") {
                let link = info_field(&replication, "master_link_status");
                if link != Some("up") {
                    return Some(format!(
                        "replica on port {port} reports master_link_status:{}",
                        link.unwrap_or("missing")
                    ));
                }
            }
        }
        None
    }

    /// Runs `redis-cli --cluster create` over every node, killing it at `deadline`.
    fn create(&self, replicas_per_master: usize, deadline: Instant) -> std::io::Result<()> {
        let log_path = self.dir.join("redis-cli.log");
        let log = std::fs::File::create(&log_path)?;
        let mut child = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(
                self.nodes
                    .iter()
                    .map(|node| format!("127.0.0.1:{}", node.port())),
            )
            .args(["--cluster-replicas", &replicas_per_master.to_string()])
            .arg("--cluster-yes")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    std::io::Error::new(
                        e.kind(),
                        "redis-cli is not installed (.ci/run installs it with redis-server; \
                         or apt-get install redis-tools)",
                    )
                } else {
                    e
                }
            })?;
        let output = || std::fs::read_to_string(&log_path).unwrap_or_default();
        loop {
            if let Some(status) = child.try_wait()? {
                if status.success() {
                    return Ok(());
                }
                return Err(std::io::Error::other(format!(
                    "redis-cli --cluster create failed ({status}):\n{}",
                    output()
                )));
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!(
                        "redis-cli --cluster create did not finish within {START_TIMEOUT:?}:\n{}",
                        output()
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn running_ports(&self) -> HashSet<u16> {
        self.nodes
            .iter()
            .filter(|node| node.is_running())
            .map(RedisServer::port)
            .collect()
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        // Each RedisServer resumes and kills its process when dropped.
        self.nodes.clear();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The cluster arguments of the node on `port`, its files kept in `dir`.
fn node_args(dir: &Path, port: u16) -> Vec<String> {
    let path = |name: String| dir.join(name).to_string_lossy().into_owned();
    vec![
        "--cluster-enabled".into(),
        "yes".into(),
        "--cluster-config-file".into(),
        path(format!("nodes-{port}.conf")),
        "--cluster-node-timeout".into(),
        RedisCluster::NODE_TIMEOUT.as_millis().to_string(),
        // A replica takes over however long ago it last heard from its master.
        "--cluster-replica-validity-factor".into(),
        "0".into(),
        // Replicas load their master's data in memory, without writing files.
        "--repl-diskless-load".into(),
        "swapdb".into(),
        "--dir".into(),
        dir.to_string_lossy().into_owned(),
        "--logfile".into(),
        path(format!("node-{port}.log")),
    ]
}

/// A free port whose cluster bus port (port + 10000) is free too.
fn free_cluster_port() -> std::io::Result<u16> {
    for _ in 0..100 {
        let port = crate::unused_port();
        let Some(bus) = port.checked_add(10000) else {
            continue;
        };
        if std::net::TcpListener::bind(("127.0.0.1", bus)).is_ok() {
            return Ok(port);
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AddrNotAvailable,
        "found no free port whose cluster bus port (+10000) is free too",
    ))
}

/// Creates a new directory under the system temp directory, unique to this cluster.
fn private_dir() -> std::io::Result<PathBuf> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.subsec_nanos());
    loop {
        let n = NEXT_DIR.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "zlink-redis-cluster-{}-{n}-{nanos}",
            std::process::id()
        ));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(std::io::Error::new(
                    e.kind(),
                    format!("cannot create {}: {e}", dir.display()),
                ))
            }
        }
    }
}

/// One line of `CLUSTER NODES`.
struct NodeEntry {
    port: u16,
    flags: Vec<String>,
    /// Slot ranges served, inclusive; importing/migrating markers left out.
    slots: Vec<(u16, u16)>,
}

impl NodeEntry {
    fn is_master(&self) -> bool {
        self.flags.iter().any(|flag| flag == "master")
    }

    fn is_failing(&self) -> bool {
        self.flags
            .iter()
            .any(|flag| matches!(flag.as_str(), "fail" | "fail?" | "handshake" | "noaddr"))
    }

    fn first_slot(&self) -> Option<u16> {
        self.slots.iter().map(|&(first, _)| first).min()
    }

    fn slot_count(&self) -> usize {
        self.slots
            .iter()
            .map(|&(first, last)| usize::from(last.saturating_sub(first)) + 1)
            .sum()
    }
}

/// Parses `CLUSTER NODES` text:
/// `<id> <ip:port@cport[,hostname]> <flags> <master> <ping> <pong> <epoch> <link> <slot>...`.
fn parse_nodes(text: &str) -> Vec<NodeEntry> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let address = fields.get(1)?.split(['@', ',']).next()?;
            let port = address.rsplit(':').next()?.parse().ok()?;
            let flags = fields.get(2)?.split(',').map(String::from).collect();
            let slots = fields
                .iter()
                .skip(8)
                .filter(|slot| !slot.starts_with('['))
                .filter_map(|slot| match slot.split_once('-') {
                    Some((first, last)) => Some((first.parse().ok()?, last.parse().ok()?)),
                    None => {
                        let slot = slot.parse().ok()?;
                        Some((slot, slot))
                    }
                })
                .collect();
            Some(NodeEntry { port, flags, slots })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends `args` to `port`, following one `-MOVED` redirection; returns the node that
    /// answered and its reply.
    fn cluster_command(cluster: &RedisCluster, port: u16, args: &[&str]) -> (u16, String) {
        let node = cluster.node_on_port(port).expect("node");
        let reply = node.command(args).expect("reply");
        let Some(moved) = reply.strip_prefix("-MOVED ") else {
            return (port, reply);
        };
        let target: u16 = moved
            .rsplit(':')
            .next()
            .and_then(|port| port.parse().ok())
            .expect("MOVED port");
        let node = cluster
            .node_on_port(target)
            .expect("MOVED to a node of the cluster");
        (target, node.command(args).expect("reply after MOVED"))
    }

    #[test]
    fn redis_cluster_of_three_masters_serves_keys_on_the_owning_node() {
        let started = Instant::now();
        let cluster = RedisCluster::start(3, 0).expect("cluster");
        eprintln!("3-master cluster started in {:?}", started.elapsed());

        let masters = cluster.master_ports().expect("masters");
        assert_eq!(masters.len(), 3);
        assert_eq!(cluster.seed_urls().len(), 3);
        assert_eq!(cluster.nodes().len(), 3);
        for node in cluster.nodes() {
            let info = node
                .bulk_command(&["CLUSTER", "INFO"], QUERY_TIMEOUT)
                .expect("CLUSTER INFO");
            assert_eq!(info_field(&info, "cluster_state"), Some("ok"));
            assert_eq!(info_field(&info, "cluster_known_nodes"), Some("3"));
            assert_eq!(info_field(&info, "cluster_slots_ok"), Some("16384"));
        }

        // {a} hashes to slot 15495, which the last master of slot order serves.
        let first = masters[0];
        let (owner, reply) = cluster_command(&cluster, first, &["SET", "{a}x", "1"]);
        assert_eq!(reply, "+OK");
        assert_eq!(owner, masters[2], "slot 15495 lives on the last master");
        let value = cluster
            .node_on_port(owner)
            .expect("owner")
            .bulk_command(&["GET", "{a}x"], QUERY_TIMEOUT)
            .expect("GET");
        assert_eq!(value, "1");
        let (_, reply) = cluster_command(&cluster, first, &["GET", "{a}x"]);
        assert_eq!(reply, "$1");
    }

    #[test]
    fn redis_cluster_survives_a_killed_master() {
        let started = Instant::now();
        let cluster = RedisCluster::start(3, 1).expect("cluster");
        eprintln!("3+3 cluster started in {:?}", started.elapsed());
        assert_eq!(cluster.nodes().len(), 6);
        let before = cluster.master_ports().expect("masters");
        assert_eq!(before.len(), 3);
        let seeds: Vec<String> = before
            .iter()
            .map(|port| format!("redis://127.0.0.1:{port}/"))
            .collect();
        assert_eq!(cluster.seed_urls(), seeds);

        let killed = cluster.kill_master(0).expect("kill");
        assert_eq!(killed, before[0]);
        let killed_at = Instant::now();
        cluster
            .wait_until_healthy(Duration::from_secs(15))
            .expect("healthy after failover");
        eprintln!("failover took {:?}", killed_at.elapsed());

        let after = cluster.master_ports().expect("masters");
        assert_eq!(after.len(), 3);
        assert!(!after.contains(&killed), "{after:?} still has {killed}");
        assert_eq!(&after[1..], &before[1..], "the other masters stay");
        assert_eq!(cluster.seed_urls(), seeds, "seeds are the masters at start");
        for node in cluster.nodes().iter().filter(|node| node.port() != killed) {
            let info = node
                .bulk_command(&["CLUSTER", "INFO"], QUERY_TIMEOUT)
                .expect("CLUSTER INFO");
            assert_eq!(info_field(&info, "cluster_state"), Some("ok"));
        }
        let (_, reply) = cluster_command(&cluster, after[1], &["SET", "{b}y", "2"]);
        assert_eq!(reply, "+OK");

        let old_master = cluster.node_on_port(killed).expect("killed node");
        old_master.restart().expect("restart");
        cluster
            .wait_until_healthy(Duration::from_secs(10))
            .expect("healthy after the old master rejoined");
        let info = old_master.info("replication").expect("INFO");
        assert_eq!(info_field(&info, "role"), Some("slave"));
        assert_eq!(
            info_field(&info, "master_port"),
            Some(after[0].to_string().as_str())
        );
        assert_eq!(cluster.master_ports().expect("masters"), after);
    }

    #[test]
    fn redis_cluster_needs_three_masters() {
        let error = RedisCluster::start(2, 1).err().expect("error");
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
    }
}
