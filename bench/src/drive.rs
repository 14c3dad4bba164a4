//! How every request/reply contestant is driven, so each one measures the same thing:
//! one call at a time for latency, and `window` callers in flight for throughput.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::stats::Throughput;
use crate::BoxError;

/// `warmup` unmeasured calls of `round_trip`, then the time of each of `count` calls, one
/// at a time.
pub async fn sequential<F, Fut>(
    round_trip: F,
    warmup: usize,
    count: usize,
) -> Result<Vec<Duration>, BoxError>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<(), BoxError>>,
{
    for _ in 0..warmup {
        round_trip().await?;
    }
    let mut samples = Vec::with_capacity(count);
    for _ in 0..count {
        let started = Instant::now();
        round_trip().await?;
        samples.push(started.elapsed());
    }
    Ok(samples)
}

/// `window` tasks, each making its next call as soon as the previous one is answered, for
/// `duration`; then waits for the last calls to finish.
pub async fn pipelined<F, Fut>(
    round_trip: F,
    window: usize,
    duration: Duration,
) -> Result<Throughput, BoxError>
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
{
    let started = Instant::now();
    let stop_sending = started + duration;
    let tasks: Vec<_> = (0..window)
        .map(|_| {
            let round_trip = round_trip.clone();
            tokio::spawn(async move {
                let mut done = 0u64;
                while Instant::now() < stop_sending {
                    round_trip().await?;
                    done += 1;
                }
                Ok::<u64, BoxError>(done)
            })
        })
        .collect();
    let mut messages = 0;
    for task in tasks {
        messages += task.await??;
    }
    Ok(Throughput {
        messages,
        elapsed: started.elapsed(),
    })
}

/// Checks that an echo came back whole.
pub fn check_echo(sent: usize, received: usize) -> Result<(), BoxError> {
    if sent == received {
        Ok(())
    } else {
        Err(format!("echo of {sent} bytes came back as {received}").into())
    }
}
