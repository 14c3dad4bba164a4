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
    fn throughput_per_second() {
        let t = Throughput {
            messages: 500,
            elapsed: Duration::from_millis(250),
        };
        assert!((t.per_second() - 2000.0).abs() < 1e-6);
    }
}
