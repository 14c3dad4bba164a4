//! Two groups in one module, with state, `Clone`, ordinary methods next to handlers, a
//! shared message type and a default channel name on one of them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use zlink::{DefaultChannel, HandlerContext, HandlerGroup, Message, PacketKind};

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
#[message(reply = Count)]
struct Increment(u64);

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Count(u64);

#[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
struct Reset;

#[derive(Clone, Default)]
struct Counter {
    total: Arc<AtomicU64>,
}

#[zlink::channel(server, name = "counter")]
impl Counter {
    /// Adds to the total.
    #[handler]
    async fn increment(&self, by: Increment, _ctx: &HandlerContext) -> zlink::Result<Count> {
        Ok(Count(self.add(by.0)))
    }

    #[handler]
    async fn reset(&self, _reset: Reset, _ctx: &HandlerContext) -> zlink::Result<()> {
        self.total.store(0, Ordering::SeqCst);
        Ok(())
    }

    fn add(&self, by: u64) -> u64 {
        self.total.fetch_add(by, Ordering::SeqCst) + by
    }
}

#[derive(Clone)]
struct Audit {
    prefix: String,
}

#[zlink::channel(server, client = AuditCaller)]
impl Audit {
    #[handler]
    async fn increment(&self, by: Increment, _ctx: &HandlerContext) -> zlink::Result<Count> {
        Ok(Count(by.0 + self.prefix.len() as u64))
    }
}

fn takes_group(_: impl HandlerGroup + Clone) {}

#[test]
fn stateful_groups_side_by_side() {
    let counter = Counter::default();
    takes_group(counter.clone());
    takes_group(Audit { prefix: "x".into() });
    assert_eq!(<Counter as DefaultChannel>::CHANNEL, "counter");
    assert_eq!(
        counter.packets(),
        vec![
            (Increment::PACKET_NAME.to_string(), PacketKind::Request),
            (Reset::PACKET_NAME.to_string(), PacketKind::Send),
        ]
    );
    assert_eq!(counter.add(2), 2);
    // The clients are distinct types with the names asked for.
    let _: Option<CounterClient> = None;
    let _: Option<AuditCaller> = None;
}
