//! Classic fanout in one process: a publisher of channel `prices` and two subscribers,
//! one taking every price event, one only the events published under topic `tea.`.
//!
//! Run: `cargo run -p zlink-examples --bin fanout-demo`

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::{Fanout, HandlerContext, Runtime};

// ANCHOR: events
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
struct PriceChanged {
    sku: String,
    cents: u64,
}

/// Collects the events it receives.
#[derive(Clone)]
struct Board {
    seen: Arc<tokio::sync::watch::Sender<Vec<String>>>,
}

#[zlink::channel(server)]
impl Board {
    #[handler]
    async fn price(&self, e: PriceChanged, _ctx: &HandlerContext) -> zlink::Result<()> {
        let line = format!("{} = {}", e.sku, e.cents);
        self.seen.send_modify(|seen| seen.push(line));
        Ok(())
    }
}
// ANCHOR_END: events

impl Board {
    fn new() -> Self {
        Board {
            seen: Arc::new(tokio::sync::watch::Sender::new(Vec::new())),
        }
    }

    /// What arrived, once at least `count` events did (or after 2 s, whatever arrived).
    async fn seen(&self, count: usize) -> Vec<String> {
        let mut seen = self.seen.subscribe();
        let _ =
            tokio::time::timeout(Duration::from_secs(2), seen.wait_for(|s| s.len() >= count)).await;
        let now = seen.borrow().clone();
        now
    }
}

fn node(rid: &str) -> zlink::RuntimeBuilder {
    Runtime::builder()
        .mesh_name("shop")
        .rid(rid)
        .listen("tcp://127.0.0.1:0")
}

#[tokio::main]
async fn main() -> zlink::Result<()> {
    // ANCHOR: roles
    let publisher = node("pricing")
        .fanout(Fanout::publisher("prices").send_high_water_mark(1000))
        .build()?
        .start()
        .await?;
    let endpoint = publisher.fanout().endpoint("prices").unwrap_or_default();

    let all = Board::new();
    let everything = node("board")
        .fanout(Fanout::subscriber("prices", all.clone()).connect(&endpoint))
        .build()?
        .start()
        .await?;
    let tea = Board::new();
    let tea_only = node("tea-board")
        .fanout(
            Fanout::subscriber("prices", tea.clone())
                .connect(&endpoint)
                .topic("tea."),
        )
        .build()?
        .start()
        .await?;

    // PUB/SUB drops what is published before a subscription arrives; wait for both
    // subscribers to hear the publisher's beacon first.
    everything.fanout().ready("prices", 1).await?;
    tea_only.fanout().ready("prices", 1).await?;
    // ANCHOR_END: roles

    // ANCHOR: publish
    let coffee = PriceChanged {
        sku: "coffee".into(),
        cents: 320,
    };
    publisher.fanout().publish("prices", &coffee).await?; // topic = packet name "PriceChanged"
    let green = PriceChanged {
        sku: "green tea".into(),
        cents: 280,
    };
    // An explicit topic:
    publisher
        .fanout()
        .publish("prices", &green)
        .topic("tea.green")
        .await?;
    // ANCHOR_END: publish

    println!("subscribed to PriceChanged: {:?}", all.seen(1).await);
    println!("subscribed to tea.:         {:?}", tea.seen(1).await);
    for rt in [tea_only, everything, publisher] {
        rt.shutdown().await;
    }
    Ok(())
}
