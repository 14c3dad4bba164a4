//! The code shown in the book's "Channels" chapter. It runs as a test, so the chapter
//! cannot drift from what works.

use std::time::Duration;

use zlink_testkit::wait_until;

// ANCHOR: messages
use serde::{Deserialize, Serialize};

/// Ask the pricing service for a quote.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Quote)]
pub struct GetQuote {
    pub sku: String,
    pub quantity: u32,
}

/// The answer to a [`GetQuote`].
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Quote {
    pub cents: u64,
    pub priced_by: String,
}

/// A one-way notification: no reply. Its packet name is chosen explicitly and it travels
/// as JSON instead of the default CBOR.
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(name = "pricing.changed", codec = zlink::Json)]
pub struct PriceChanged {
    pub sku: String,
}
// ANCHOR_END: messages

// ANCHOR: handlers
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use zlink::HandlerContext;

/// The pricing service of one node. The runtime calls handlers concurrently, so shared
/// state sits behind an `Arc`.
#[derive(Clone)]
pub struct Pricing {
    node_name: String,
    changes_seen: Arc<AtomicU64>,
}

/// What can go wrong while pricing; turned into an error reply with a kind.
#[derive(Debug)]
pub enum PricingError {
    ZeroQuantity,
}

impl From<PricingError> for zlink::Error {
    fn from(e: PricingError) -> Self {
        match e {
            PricingError::ZeroQuantity => {
                zlink::Error::new(zlink::ErrorKind::Rejected, "quantity must be positive")
            }
        }
    }
}

#[zlink::channel(server, name = "pricing")]
impl Pricing {
    /// Prices `quantity` units of `sku`.
    #[handler]
    async fn quote(&self, q: GetQuote, _ctx: &HandlerContext) -> Result<Quote, PricingError> {
        if q.quantity == 0 {
            return Err(PricingError::ZeroQuantity);
        }
        Ok(Quote {
            cents: 250 * u64::from(q.quantity),
            priced_by: self.node_name.clone(),
        })
    }

    /// Records that a price changed.
    #[handler]
    async fn price_changed(&self, change: PriceChanged, ctx: &HandlerContext) -> zlink::Result<()> {
        let request_id = ctx.metadata().get("request-id").unwrap_or("-");
        tracing::info!(sku = %change.sku, request_id, "price changed");
        self.changes_seen.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

impl Pricing {
    /// A pricing service answering as `node_name`.
    pub fn new(node_name: &str) -> Self {
        Pricing {
            node_name: node_name.to_string(),
            changes_seen: Arc::default(),
        }
    }
}
// ANCHOR_END: handlers

// ANCHOR: closures
/// The quote handler again, as a closure group: no macro, same wire behaviour.
fn pricing_closures(node_name: &'static str) -> zlink::Handlers {
    zlink::Handlers::new().on_request(move |_ctx, q: GetQuote| async move {
        if q.quantity == 0 {
            return Err(PricingError::ZeroQuantity.into());
        }
        Ok(Quote {
            cents: 250 * u64::from(q.quantity),
            priced_by: node_name.into(),
        })
    })
}
// ANCHOR_END: closures

// ANCHOR: hand_written
use zlink::{BoxFuture, Bytes, HandlerGroup, Message, PacketKind};

/// The quote handler once more, written against the trait the runtime dispatches to.
struct PricingByHand;

impl HandlerGroup for PricingByHand {
    fn packets(&self) -> Vec<(String, PacketKind)> {
        vec![(GetQuote::PACKET_NAME.to_string(), PacketKind::Request)]
    }

    /// `handler` is the position in `packets()` of the packet that arrived: the runtime
    /// has matched its name and kind already.
    fn handle<'a>(
        &'a self,
        ctx: HandlerContext,
        handler: usize,
        payload: Bytes,
    ) -> BoxFuture<'a, zlink::Result<Bytes>> {
        Box::pin(async move {
            if handler != 0 {
                return Err(zlink::Error::new(
                    zlink::ErrorKind::NotFound,
                    format!("no handler for {}", ctx.packet()),
                ));
            }
            let q = GetQuote::decode(&payload)?;
            if q.quantity == 0 {
                return Err(PricingError::ZeroQuantity.into());
            }
            Quote {
                cents: 250 * u64::from(q.quantity),
                priced_by: "by-hand".into(),
            }
            .encode()
        })
    }
}
// ANCHOR_END: hand_written

#[tokio::test]
async fn channels_chapter_walkthrough() -> zlink::Result<()> {
    // ANCHOR: servers
    use zlink::{PeerSpec, Runtime};

    let pricing_a = Runtime::builder()
        .mesh_name("shop")
        .rid("pricing-a")
        .listen("tcp://127.0.0.1:0")
        .serve(Pricing::new("pricing-a")) // the default channel, "pricing"
        .build()?
        .start()
        .await?;
    let pricing_b = Runtime::builder()
        .mesh_name("shop")
        .rid("pricing-b")
        .listen("tcp://127.0.0.1:0")
        .serve_weighted(Pricing::new("pricing-b"), 300)
        .build()?
        .start()
        .await?;
    // ANCHOR_END: servers

    // ANCHOR: client
    let checkout = Runtime::builder()
        .mesh_name("shop")
        .rid("checkout")
        .listen("tcp://127.0.0.1:0")
        .peer(PeerSpec::new(pricing_a.endpoint()).expect_rid("pricing-a"))
        .peer(PeerSpec::new(pricing_b.endpoint()).expect_rid("pricing-b"))
        .build()?
        .start()
        .await?;
    // The typed client is the Client role's only declaration.
    let pricing = PricingClient::on_default_channel(&checkout);
    // Connections are made in the background: wait (woken by peer events) until both
    // servers can be picked.
    checkout.channels().ready("pricing", 2).await?;

    let quote = pricing
        .quote(&GetQuote {
            sku: "tea".into(),
            quantity: 2,
        })
        .await?;
    assert_eq!(quote.cents, 500);
    // ANCHOR_END: client

    // ANCHOR: options
    let quote = pricing
        .quote(&GetQuote {
            sku: "tea".into(),
            quantity: 1,
        })
        .timeout(Duration::from_secs(2))
        .metadata("request-id", "r-17")?
        .await?;
    // The same settings, made once and given to several calls:
    let options = zlink::CallOptions::new()
        .timeout(Duration::from_secs(2))
        .metadata("request-id", "r-18")?;
    pricing
        .price_changed(&PriceChanged { sku: "tea".into() })
        .options(options)
        .await?;
    // ANCHOR_END: options
    assert_eq!(quote.cents, 250);

    // ANCHOR: errors
    let refused = pricing
        .quote(&GetQuote {
            sku: "tea".into(),
            quantity: 0,
        })
        .await;
    match refused {
        Err(e) if e.is(zlink::ErrorKind::Rejected) => { /* the handler said no */ }
        other => panic!("unexpected {other:?}"),
    }
    // ANCHOR_END: errors

    // ANCHOR: drain
    pricing_a.channels().set_weight("pricing", 0)?; // drain: no new selections, in-flight work finishes
    checkout
        .nodes()
        .wait_for(Duration::from_secs(5), |peers| {
            peers
                .iter()
                .any(|p| p.rid == "pricing-a" && p.weight("pricing") == Some(0))
        })
        .await?;
    for _ in 0..4 {
        let q = pricing
            .quote(&GetQuote {
                sku: "tea".into(),
                quantity: 1,
            })
            .await?;
        assert_eq!(q.priced_by, "pricing-b");
    }
    pricing_a.channels().set_weight("pricing", 100)?; // restore
                                                      // ANCHOR_END: drain

    // ANCHOR: shutdown
    checkout.shutdown().await;
    pricing_a.shutdown().await;
    pricing_b.shutdown().await;
    // ANCHOR_END: shutdown
    Ok(())
}

/// Serves `group` on "pricing" and asks it for 3 teas through the generated client.
async fn quote_from(group: impl HandlerGroup) -> zlink::Result<Quote> {
    use zlink::{PeerSpec, Runtime};
    let server = Runtime::builder()
        .mesh_name("shop")
        .listen("tcp://127.0.0.1:0")
        .channel_server("pricing", group)
        .build()?
        .start()
        .await?;
    let client = Runtime::builder()
        .mesh_name("shop")
        .listen("tcp://127.0.0.1:0")
        .channel_client("pricing")
        .peer(PeerSpec::new(server.endpoint()))
        .build()?
        .start()
        .await?;
    wait_until(Duration::from_secs(5), "peer ready", || async {
        client.nodes().peers().len() == 1
    })
    .await;
    let pricing = PricingClient::new(&client, "pricing");
    let refused = pricing
        .quote(&GetQuote {
            sku: "x".into(),
            quantity: 0,
        })
        .await
        .map(|q| q.cents);
    assert!(
        matches!(&refused, Err(e) if e.is(zlink::ErrorKind::Rejected)),
        "{refused:?}"
    );
    let quote = pricing
        .quote(&GetQuote {
            sku: "x".into(),
            quantity: 3,
        })
        .await;
    client.shutdown().await;
    server.shutdown().await;
    quote
}

#[tokio::test]
async fn macro_closure_and_hand_written_groups_answer_alike() -> zlink::Result<()> {
    let by_macro = quote_from(Pricing::new("macro")).await?;
    let by_closures = quote_from(pricing_closures("closures")).await?;
    let by_hand = quote_from(PricingByHand).await?;
    assert_eq!(
        [by_macro.cents, by_closures.cents, by_hand.cents],
        [750, 750, 750]
    );
    assert_eq!(
        [by_macro.priced_by, by_closures.priced_by, by_hand.priced_by],
        ["macro", "closures", "by-hand"]
    );
    Ok(())
}
