//! [`unused_endpoint`]: a port of 127.0.0.1 that a test may bind later, after something
//! else has tried to reach it.
//!
//! Asking the kernel for port 0 and releasing the port does not reserve it: the kernel
//! hands the same ephemeral range to every later port-0 bind and to the source port of
//! every outgoing connection, and with eight test threads dialing and listening, one of
//! them takes the released port within a second or two. The ports given out here lie
//! below the kernel's ephemeral range, which it never assigns on its own, and each one is
//! given out once per process and only after a bind showed it free.

use std::net::TcpListener;
use std::sync::atomic::{AtomicU32, Ordering};

/// The lowest port handed out; below it live the well-known and registered services a
/// test machine may run.
const FIRST: u32 = 10_000;
/// Redis Cluster listens on its port plus this for its bus: the ports handed out end this
/// far below the ephemeral range so that a cluster node's bus port lies below it too.
const CLUSTER_BUS_OFFSET: u32 = 10_000;
/// The kernel's default ephemeral range starts here when its setting cannot be read.
const DEFAULT_EPHEMERAL_START: u32 = 32_768;

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A `tcp://127.0.0.1:PORT` endpoint with nothing listening on it, that neither the
/// kernel nor another caller in this process hands out again.
///
/// # Panics
/// When every candidate port is taken (a test-support failure, not a test outcome).
pub fn unused_endpoint() -> String {
    format!("tcp://127.0.0.1:{}", unused_port())
}

/// The port of [`unused_endpoint`].
///
/// # Panics
/// When every candidate port is taken.
pub fn unused_port() -> u16 {
    let end = last_port_handed_out();
    let span = end - FIRST;
    // Processes started together (the CI's test binaries run one after another, but a
    // developer may run two) begin at different places in the range.
    let start = std::process::id().wrapping_mul(7_919) % span;
    NEXT.compare_exchange(0, start + 1, Ordering::SeqCst, Ordering::SeqCst)
        .ok();
    for _ in 0..span {
        let offset = NEXT.fetch_add(1, Ordering::SeqCst) % span;
        let port = u16::try_from(FIRST + offset).unwrap_or(u16::MAX);
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no unused port of 127.0.0.1 in {FIRST}..{end}")
}

/// One past the highest port [`unused_port`] hands out.
fn last_port_handed_out() -> u32 {
    ephemeral_start()
        .saturating_sub(CLUSTER_BUS_OFFSET)
        .max(FIRST + 1_000)
}

/// The first port of the kernel's ephemeral range (Linux); the default elsewhere.
fn ephemeral_start() -> u32 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(DEFAULT_EPHEMERAL_START)
        .min(u32::from(u16::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unused_port_is_below_the_ephemeral_range_and_never_given_twice() {
        let ports: Vec<u16> = (0..50).map(|_| unused_port()).collect();
        let mut distinct = ports.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), ports.len(), "{ports:?}");
        assert!(ports
            .iter()
            .all(|&p| u32::from(p) >= FIRST && u32::from(p) < last_port_handed_out()));
        assert!(u32::from(ports[0]) + CLUSTER_BUS_OFFSET < ephemeral_start());
    }

    #[test]
    fn an_unused_port_is_one_nothing_listens_on() {
        let port = unused_port();
        TcpListener::bind(("127.0.0.1", port)).expect("the port is free to bind");
    }
}
