//! Classic fanout in one process: a publisher of channel `prices` and two subscribers,
//! one taking every price event, one only the events published under topic `tea.`.
//!
//! Run: `cargo run -p zlink-examples --bin fanout-demo`

use std::sync::{Arc, Mutex};
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
#[derive(Clone, Default)]
struct Board {
    seen: Arc<Mutex<Vec<String>>>,
}

#[zlink::channel(server)]
impl Board {
    #[handler]
    async fn price(&self, e: PriceChanged, _ctx: &HandlerContext) -> zlink::Result<()> {
        let line = format!("{} = {}", e.sku, e.cents);
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(line);
        Ok(())
    }
}
// ANCHOR_END: events

impl Board {
    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
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

    let all = Board::default();
    let everything = node("board")
        .fanout(Fanout::subscriber("prices", all.clone()).connect(&endpoint))
        .build()?
        .start()
        .await?;
    let tea = Board::default();
    let tea_only = node("tea-board")
        .fanout(
            Fanout::subscriber("prices", tea.clone())
                .connect(&endpoint)
                .topic("tea."),
        )
        .build()?
        .start()
        .await?;
    // ANCHOR_END: roles

    // PUB/SUB drops what is published before a subscription arrives; wait for both
    // subscribers to hear the publisher's beacon first.
    for _ in 0..200 {
        let ready = |rt: &Runtime| {
            rt.fanout()
                .publishers("prices")
                .is_ok_and(|p| p.iter().all(|p| p.ready))
        };
        if ready(&everything) && ready(&tea_only) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

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
    publisher
        .fanout()
        .publish_topic("prices", "tea.green", &green)
        .await?; // an explicit topic
                 // ANCHOR_END: publish

    for _ in 0..100 {
        if all.seen().len() == 1 && tea.seen().len() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("subscribed to PriceChanged: {:?}", all.seen());
    println!("subscribed to tea.:         {:?}", tea.seen());
    for rt in [tea_only, everything, publisher] {
        rt.shutdown().await;
    }
    Ok(())
}
