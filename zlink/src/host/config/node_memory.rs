//! How much memory this node may use: its cgroup's limit when it has one (a container),
//! else the machine's. Sizes what is sized for the node by default.

/// The node's memory in bytes, `None` where neither can be read.
pub(crate) fn bytes() -> Option<u64> {
    let machine = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| mem_total(&text));
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|text| cgroup_limit(&text));
    match (machine, cgroup) {
        (Some(machine), Some(limit)) => Some(machine.min(limit)),
        (machine, limit) => machine.or(limit),
    }
}

/// `MemTotal` of `/proc/meminfo`, in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
    let kib: u64 = line.trim().trim_end_matches("kB").trim().parse().ok()?;
    kib.checked_mul(1024)
}

/// A cgroup v2 `memory.max`: bytes, or `max` for no limit.
fn cgroup_limit(memory_max: &str) -> Option<u64> {
    memory_max.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machines_memory_is_read_from_meminfo() {
        let meminfo = "MemTotal:       24576000 kB\nMemFree:        1000 kB\n";
        assert_eq!(mem_total(meminfo), Some(24_576_000 * 1024));
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
        assert_eq!(mem_total("MemTotal: lots kB\n"), None);
    }

    #[test]
    fn a_cgroup_without_a_limit_sets_none() {
        assert_eq!(cgroup_limit("max\n"), None);
        assert_eq!(cgroup_limit("2147483648\n"), Some(2_147_483_648));
    }

    #[test]
    fn this_machine_has_some_memory() {
        assert!(bytes().is_some_and(|b| b > 0));
    }
}
