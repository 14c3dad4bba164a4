//! Classic fanout in one process: a publisher of channel `prices` and two subscribers,
//! one taking every price event, one only the events published under topic `tea.`.
//!
//! Run: `cargo run -p zlink-examples --bin fanout-demo`

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::fanout::FanoutSubscriberSpec;
use zlink::{Fanout, HandlerContext, Runtime};
use zlink_examples::setup::{self, Security};

const USAGE: &str = "\
usage: fanout-demo
    A publisher of channel \"prices\" and two subscribers, one taking every price
    event, one only the events published under topic \"tea.\".";

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

/// A node of the demo, secured as the command line says.
async fn node(
    rid: &str,
    role: impl Into<zlink::fanout::FanoutDeclaration>,
    security: &Security,
) -> zlink::Result<Runtime> {
    let builder = Runtime::builder()
        .mesh_name("shop")
        .rid(rid)
        .listen("tcp://127.0.0.1:0")
        .fanout(role);
    zlink_examples::operate::start(security, builder).await
}

/// A subscriber connected to `endpoint`, the publisher's (with CURVE, the publisher is
/// this process's first node and proves its key).
fn connect(
    subscriber: FanoutSubscriberSpec,
    endpoint: &str,
    security: &Security,
) -> FanoutSubscriberSpec {
    match security.key_of(0) {
        Some(key) => subscriber.connect_curve(endpoint, key),
        None => subscriber.connect(endpoint),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let (security, rest) = match setup::begin("fanout-demo", USAGE) {
        Ok(begun) => begun,
        Err(code) => return code,
    };
    if let Err(code) = setup::no_more_args("fanout-demo", USAGE, &rest) {
        return code;
    }
    println!("{}", security.describe());
    match run(&security).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fanout-demo: error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(security: &Security) -> zlink::Result<()> {
    // ANCHOR: roles
    let publisher = node(
        "pricing",
        Fanout::publisher("prices").send_high_water_mark(1000),
        &security.node(0),
    )
    .await?;
    let endpoint = publisher.fanout().endpoint("prices").unwrap_or_default();

    let all = Board::new();
    let subscriber = Fanout::subscriber("prices", all.clone());
    let everything = node(
        "board",
        connect(subscriber, &endpoint, security),
        &security.node(1),
    )
    .await?;
    let tea = Board::new();
    let subscriber = Fanout::subscriber("prices", tea.clone()).topic("tea.");
    let tea_only = node(
        "tea-board",
        connect(subscriber, &endpoint, security),
        &security.node(2),
    )
    .await?;

    // PUB/SUB drops what is published before a subscription arrives; wait for both
    // subscribers to hear the publisher's beacon first.
    println!("waiting for the publisher at {endpoint} to greet both subscribers...");
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
