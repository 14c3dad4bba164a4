//! The server side of the `greet` channel.
//!
//! A [`Greeter`] is the channel's handler group: `#[zlink::channel(server)]` turns its
//! `#[handler]` methods into the dispatch the runtime calls and generates
//! [`GreeterClient`], the typed client callers use. It keeps two counters the demo reads:
//! requests answered and requests being worked on right now.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zlink::HandlerContext;

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

// ANCHOR: handlers
/// The `greet` service of one server node. The runtime may call its handlers concurrently,
/// so the counters live behind an `Arc`; cloning a greeter shares them.
#[derive(Debug, Clone)]
pub struct Greeter {
    rid: String,
    counters: Arc<Counters>,
}

#[zlink::channel(server, name = "greet")]
impl Greeter {
    /// Greets `name`, naming this server in the reply.
    #[handler]
    async fn greet(&self, greet: Greet, _ctx: &HandlerContext) -> zlink::Result<Greeting> {
        let _working = Working::start(&self.counters);
        Ok(Greeting {
            text: format!("Hello, {}!", greet.name),
            by: self.rid.clone(),
        })
    }

    /// Greets after `millis` milliseconds of pretend work.
    #[handler]
    async fn slow_greet(&self, slow: SlowGreet, _ctx: &HandlerContext) -> zlink::Result<Greeting> {
        let _working = Working::start(&self.counters);
        tokio::time::sleep(Duration::from_millis(slow.millis)).await;
        Ok(Greeting {
            text: format!("Hello, {}! (took {} ms)", slow.name, slow.millis),
            by: self.rid.clone(),
        })
    }
}
// ANCHOR_END: handlers

impl Greeter {
    /// A greeter for the server node `rid`; replies name it in [`Greeting::by`].
    pub fn new(rid: impl Into<String>) -> Self {
        Greeter {
            rid: rid.into(),
            counters: Arc::default(),
        }
    }

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
