//! Latency percentiles and throughput figures.

use std::time::Duration;

/// Percentiles of a set of round-trip times, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latency {
    /// How many round trips were measured.
    pub count: usize,
    /// Median.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Mean.
    pub mean_us: f64,
}

impl Latency {
    /// Summarises `samples` (any order). `None` when there are none.
    pub fn of(mut samples: Vec<Duration>) -> Option<Latency> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        let total: Duration = samples.iter().sum();
        Some(Latency {
            count: samples.len(),
            p50_us: micros(percentile(&samples, 50.0)),
            p99_us: micros(percentile(&samples, 99.0)),
            mean_us: micros(total) / samples.len() as f64,
        })
    }
}

/// Nearest-rank percentile of sorted, non-empty `samples`.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Messages completed over a span of time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Throughput {
    /// Completed round trips.
    pub messages: u64,
    /// From the first send to the last reply.
    pub elapsed: Duration,
}

impl Throughput {
    /// Round trips per second.
    pub fn per_second(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.messages as f64 / secs
        } else {
            0.0
        }
    }
}

/// The CPU time this process has used so far (user and system, all threads), from
/// `/proc/self/stat`; `None` where that is not readable. Its tick is 10 ms: a phase of a
/// few seconds on two cores reads to well under 1%.
pub fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces; the fields after its ')' are plain.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // utime and stime are fields 14 and 15, the 12th and 13th after the name.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    const TICKS_PER_SECOND: u64 = 100;
    Some(Duration::from_millis(ticks * 1000 / TICKS_PER_SECOND))
}

/// The KiB of RSS this process holds now (0 where `/proc/self/status` is unreadable).
pub fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Hands the allocator's free pages back to the system, so RSS shows what is still held
/// (glibc keeps freed memory otherwise; elsewhere this does nothing).
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: malloc_trim only returns free heap pages to the kernel; it takes no
        // pointer and is safe to call at any time.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// CPU microseconds per message of a phase that used `cpu` for `messages`.
pub fn cpu_us_per(cpu: Option<Duration>, messages: u64) -> Option<f64> {
    cpu.filter(|_| messages > 0)
        .map(|cpu| micros(cpu) / messages as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let samples: Vec<Duration> = (1..=100).rev().map(Duration::from_micros).collect();
        let l = Latency::of(samples).unwrap();
        assert_eq!(l.count, 100);
        assert!((l.p50_us - 50.0).abs() < 1e-6);
        assert!((l.p99_us - 99.0).abs() < 1e-6);
        assert!((l.mean_us - 50.5).abs() < 1e-6);
        assert_eq!(Latency::of(Vec::new()), None);
    }

    #[test]
    fn process_cpu_grows_with_work() {
        let before = process_cpu().expect("/proc/self/stat is readable on Linux");
        let started = std::time::Instant::now();
        let mut x = 0u64;
        while started.elapsed() < Duration::from_millis(60) {
            x = x.wrapping_mul(31).wrapping_add(1);
        }
        std::hint::black_box(x);
        let after = process_cpu().unwrap();
        assert!(
            after >= before + Duration::from_millis(20),
            "{before:?} -> {after:?}"
        );
        assert_eq!(cpu_us_per(Some(Duration::from_millis(3)), 1000), Some(3.0));
        assert_eq!(cpu_us_per(Some(Duration::from_millis(3)), 0), None);
    }

    #[test]
    fn throughput_per_second() {
        let t = Throughput {
            messages: 500,
            elapsed: Duration::from_millis(250),
        };
        assert!((t.per_second() - 2000.0).abs() < 1e-6);
    }
}
