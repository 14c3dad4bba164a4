//! The code shown in the book's "Channels" chapter. It runs as a test, so the chapter
//! cannot drift from what works.

use std::time::Duration;

use zlink_testkit::wait_until;

// ANCHOR: messages
use serde::{Deserialize, Serialize};

/// Ask the pricing service for a quote.
#[derive(Debug, Serialize, Deserialize)]
pub struct GetQuote {
    pub sku: String,
    pub quantity: u32,
}
zlink::cbor_message!(GetQuote, "GetQuote");

/// The answer to a [`GetQuote`].
#[derive(Debug, Serialize, Deserialize)]
pub struct Quote {
    pub cents: u64,
    pub priced_by: String,
}
zlink::cbor_message!(Quote, "Quote");

impl zlink::Request for GetQuote {
    type Reply = Quote;
}

/// A one-way notification: no reply.
#[derive(Debug, Serialize, Deserialize)]
pub struct PriceChanged {
    pub sku: String,
}
zlink::cbor_message!(PriceChanged, "PriceChanged");
// ANCHOR_END: messages

// ANCHOR: handlers
fn pricing_handlers(node_name: &'static str) -> zlink::Handlers {
    zlink::Handlers::new()
        .on_request(move |_ctx, q: GetQuote| async move {
            if q.quantity == 0 {
                return Err(zlink::Error::new(
                    zlink::ErrorKind::Rejected,
                    "quantity must be positive",
                ));
            }
            Ok(Quote {
                cents: 250 * u64::from(q.quantity),
                priced_by: node_name.into(),
            })
        })
        .on_send(|_ctx, change: PriceChanged| async move {
            tracing::info!(sku = %change.sku, "price changed");
            Ok(())
        })
}
// ANCHOR_END: handlers

// ANCHOR: hand_written
/// The same group written by hand against the trait the runtime dispatches to.
struct PricingByHand;

#[async_trait::async_trait]
impl zlink::HandlerGroup for PricingByHand {
    fn packets(&self) -> Vec<(String, zlink::PacketKind)> {
        vec![("GetQuote".into(), zlink::PacketKind::Request)]
    }

    async fn handle(
        &self,
        _ctx: zlink::HandlerContext,
        packet: &str,
        payload: bytes::Bytes,
    ) -> zlink::Result<bytes::Bytes> {
        use zlink::Message;
        match packet {
            "GetQuote" => {
                let q = GetQuote::decode(&payload)?;
                Quote {
                    cents: 250 * u64::from(q.quantity),
                    priced_by: "by-hand".into(),
                }
                .encode()
            }
            other => Err(zlink::Error::new(
                zlink::ErrorKind::NotFound,
                format!("no handler for {other}"),
            )),
        }
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
        .channel_server("pricing", pricing_handlers("pricing-a"))
        .build()?
        .start()
        .await?;
    let pricing_b = Runtime::builder()
        .mesh_name("shop")
        .rid("pricing-b")
        .listen("tcp://127.0.0.1:0")
        .channel_server_weighted("pricing", pricing_handlers("pricing-b"), 300)
        .build()?
        .start()
        .await?;
    // ANCHOR_END: servers

    // ANCHOR: client
    let checkout = Runtime::builder()
        .mesh_name("shop")
        .rid("checkout")
        .listen("tcp://127.0.0.1:0")
        .channel_client("pricing")
        .peer(PeerSpec::new(pricing_a.endpoint()).expect_rid("pricing-a"))
        .peer(PeerSpec::new(pricing_b.endpoint()).expect_rid("pricing-b"))
        .build()?
        .start()
        .await?;
    checkout
        .wait_for_peers(Duration::from_secs(5), |peers| peers.len() == 2)
        .await?;

    let quote = checkout
        .request_to_channel(
            "pricing",
            &GetQuote {
                sku: "tea".into(),
                quantity: 2,
            },
        )
        .await?;
    assert_eq!(quote.cents, 500);
    // ANCHOR_END: client

    // ANCHOR: options
    let options = zlink::CallOptions::new()
        .timeout(Duration::from_secs(2))
        .metadata("request-id", "r-17")?;
    let quote = checkout
        .request_to_channel_with(
            "pricing",
            &GetQuote {
                sku: "tea".into(),
                quantity: 1,
            },
            options,
        )
        .await?;
    checkout
        .send_to_channel("pricing", &PriceChanged { sku: "tea".into() })
        .await?;
    // ANCHOR_END: options
    assert_eq!(quote.cents, 250);

    // ANCHOR: errors
    let refused = checkout
        .request_to_channel(
            "pricing",
            &GetQuote {
                sku: "tea".into(),
                quantity: 0,
            },
        )
        .await;
    match refused {
        Err(e) if e.is(zlink::ErrorKind::Rejected) => { /* the handler said no */ }
        other => panic!("unexpected {other:?}"),
    }
    // ANCHOR_END: errors

    // ANCHOR: drain
    pricing_a.set_weight("pricing", 0)?; // drain: no new selections, in-flight work finishes
    checkout
        .wait_for_peers(Duration::from_secs(5), |peers| {
            peers
                .iter()
                .any(|p| p.rid == "pricing-a" && p.weight("pricing") == Some(0))
        })
        .await?;
    for _ in 0..4 {
        let q = checkout
            .request_to_channel(
                "pricing",
                &GetQuote {
                    sku: "tea".into(),
                    quantity: 1,
                },
            )
            .await?;
        assert_eq!(q.priced_by, "pricing-b");
    }
    pricing_a.set_weight("pricing", 100)?; // restore
                                           // ANCHOR_END: drain

    // ANCHOR: shutdown
    checkout.shutdown().await;
    pricing_a.shutdown().await;
    pricing_b.shutdown().await;
    // ANCHOR_END: shutdown
    Ok(())
}

#[tokio::test]
async fn hand_written_group_serves_like_the_closure_group() -> zlink::Result<()> {
    use zlink::{PeerSpec, Runtime};
    let server = Runtime::builder()
        .mesh_name("shop")
        .listen("tcp://127.0.0.1:0")
        .channel_server("pricing", PricingByHand)
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
        client.peers().len() == 1
    })
    .await;
    let q = client
        .request_to_channel(
            "pricing",
            &GetQuote {
                sku: "x".into(),
                quantity: 3,
            },
        )
        .await?;
    assert_eq!((q.cents, q.priced_by.as_str()), (750, "by-hand"));
    client.shutdown().await;
    server.shutdown().await;
    Ok(())
}
