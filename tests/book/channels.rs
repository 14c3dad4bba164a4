//! The code shown in the book's "Channels" chapter. It runs as a test, so the chapter
//! cannot drift from what works.

use zlink::HandlerGroup;

use std::time::Duration;

use zlink_testkit::wait_until;

zlink_book_snippets::snippet!("channels.md", "messages");

zlink_book_snippets::snippet!("channels.md", "handlers");

zlink_book_snippets::snippet!("channels.md", "closures");

zlink_book_snippets::snippet!("channels.md", "hand_written");

#[tokio::test]
async fn channels_chapter_walkthrough() -> zlink::Result<()> {
    zlink_book_snippets::statements!("channels.md", "servers");

    zlink_book_snippets::statements!("channels.md", "client");

    zlink_book_snippets::statements!("channels.md", "options");
    assert_eq!(quote.cents, 250);

    zlink_book_snippets::statements!("channels.md", "errors");

    zlink_book_snippets::statements!("channels.md", "drain");

    zlink_book_snippets::statements!("channels.md", "shutdown");
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
