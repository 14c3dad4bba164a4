//! This process's CPU and resident memory, read from Linux's `/proc` while a page is open
//! (`None` elsewhere): what the nodes of the process cost the machine.

use std::time::Instant;

use serde::Serialize;

/// Clock ticks per second of `/proc/self/stat`'s CPU times (`USER_HZ`, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;
/// Bytes per page of `/proc/self/statm`.
const PAGE_BYTES: u64 = 4096;

/// The process's figures at one update.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ProcessFigures {
    /// CPU used since the last update, in percent of one core.
    pub(crate) cpu_percent: f64,
    /// Resident memory.
    pub(crate) rss_bytes: u64,
}

/// The CPU time at the last update, to difference the next one against.
#[derive(Default)]
pub(crate) struct ProcessMeter {
    previous: Option<(Instant, f64)>,
}

impl ProcessMeter {
    /// The figures since the last call (`None` where `/proc` cannot be read).
    pub(crate) fn update(&mut self) -> Option<ProcessFigures> {
        let now = Instant::now();
        let cpu = cpu_seconds(&std::fs::read_to_string("/proc/self/stat").ok()?)?;
        let rss = rss_pages(&std::fs::read_to_string("/proc/self/statm").ok()?)?;
        let cpu_percent = match self.previous {
            Some((then, before)) => {
                let wall = now.duration_since(then).as_secs_f64().max(1e-3);
                ((cpu - before) / wall * 1000.0).round() / 10.0
            }
            None => 0.0,
        };
        self.previous = Some((now, cpu));
        Some(ProcessFigures {
            cpu_percent,
            rss_bytes: rss * PAGE_BYTES,
        })
    }
}

/// User plus system CPU seconds from `/proc/self/stat` (fields 14 and 15, counted after
/// the command name, which may hold spaces and ends at the last `)`).
fn cpu_seconds(stat: &str) -> Option<f64> {
    let (_, after_name) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // After the name: state is field 3, so utime (14) is index 11 and stime (15) 12.
    let user: f64 = fields.get(11)?.parse().ok()?;
    let system: f64 = fields.get(12)?.parse().ok()?;
    Some((user + system) / TICKS_PER_SECOND)
}

/// Resident pages from `/proc/self/statm` (its second field).
fn rss_pages(statm: &str) -> Option<u64> {
    statm.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_and_memory_are_read_from_proc_lines_and_garbage_gives_none() {
        let stat = "42 (a (b) c) S 1 2 3 4 5 6 7 8 9 10 150 50 0 0";
        assert_eq!(cpu_seconds(stat), Some(2.0));
        assert_eq!(rss_pages("100 25 3 4 0 5 0"), Some(25));
        assert_eq!(cpu_seconds("no name"), None);
        assert_eq!(cpu_seconds("1 (x) S 1"), None);
        assert_eq!(rss_pages(""), None);
    }
}
