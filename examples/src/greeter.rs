//! The server side of the `greet` channel.
//!
//! A [`Greeter`] builds the channel's handler group from closures with
//! [`zlink::Handlers`] and keeps two counters the demo reads: requests answered and
//! requests being worked on right now.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zlink::Handlers;

use crate::messages::{Greet, Greeting, SlowGreet};

/// Counters shared by a greeter's handlers.
#[derive(Debug, Default)]
struct Counters {
    answered: AtomicU64,
    in_flight: AtomicUsize,
}

/// Counts one request as in flight for as long as it lives, then as answered. Being a
/// guard, it also undoes the in-flight count when a handler is cancelled.
struct Working(Arc<Counters>);

impl Working {
    fn start(counters: &Arc<Counters>) -> Self {
        counters.in_flight.fetch_add(1, Ordering::SeqCst);
        Working(counters.clone())
    }
}

impl Drop for Working {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.0.answered.fetch_add(1, Ordering::SeqCst);
    }
}

/// The `greet` service of one server node.
#[derive(Debug, Clone)]
pub struct Greeter {
    rid: String,
    counters: Arc<Counters>,
}

impl Greeter {
    /// A greeter for the server node `rid`; replies name it in [`Greeting::by`].
    pub fn new(rid: impl Into<String>) -> Self {
        Greeter {
            rid: rid.into(),
            counters: Arc::default(),
        }
    }

    // ANCHOR: handlers
    /// The handler group to register for the channel: one closure per request type.
    ///
    /// The runtime may call the handlers concurrently, so whatever they share lives
    /// behind an `Arc` and is cloned into each call's future.
    pub fn handlers(&self) -> Handlers {
        let (rid, counters) = (self.rid.clone(), self.counters.clone());
        let (slow_rid, slow_counters) = (self.rid.clone(), self.counters.clone());
        Handlers::new()
            .on_request(move |_ctx, greet: Greet| {
                let working = Working::start(&counters);
                let reply = Greeting {
                    text: format!("Hello, {}!", greet.name),
                    by: rid.clone(),
                };
                async move {
                    drop(working);
                    Ok(reply)
                }
            })
            .on_request(move |_ctx, slow: SlowGreet| {
                let working = Working::start(&slow_counters);
                let by = slow_rid.clone();
                async move {
                    tokio::time::sleep(Duration::from_millis(slow.millis)).await;
                    drop(working);
                    let text = format!("Hello, {}! (took {} ms)", slow.name, slow.millis);
                    Ok(Greeting { text, by })
                }
            })
    }
    // ANCHOR_END: handlers

    /// The RID this greeter answers as.
    pub fn rid(&self) -> &str {
        &self.rid
    }

    /// How many requests this greeter has answered so far.
    pub fn answered(&self) -> u64 {
        self.counters.answered.load(Ordering::SeqCst)
    }

    /// How many requests this greeter is working on right now.
    pub fn in_flight(&self) -> usize {
        self.counters.in_flight.load(Ordering::SeqCst)
    }
}
