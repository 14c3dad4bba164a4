//! Reconnect backoff.

use std::time::Duration;

/// The wait before the next reconnect attempt: 100 ms plus up to 99 ms of jitter
/// (100..=199 ms), the same on every retry.
pub fn reconnect_delay() -> Duration {
    Duration::from_millis(100 + rand::random_range(0..100))
}

#[cfg(test)]
mod tests {
    #[test]
    fn reconnect_delay_stays_in_100_to_199_ms() {
        for _ in 0..1000 {
            let d = super::reconnect_delay().as_millis();
            assert!((100..=199).contains(&d), "{d}");
        }
    }
}
