//! RouteMesh channel contracts over real TCP on 127.0.0.1.

use std::time::Duration;

use zlink::{CallOptions, ErrorKind};
use zlink_tests::*;

#[tokio::test]
async fn request_reply_roundtrip_carries_metadata_to_the_handler() {
    zlink_testkit::init_tracing();
    let a = server("a", 100).await;
    let c = client("c", &[&a]).await;
    let opts = CallOptions::new().metadata("trace", "t-1").unwrap();
    let reply = c
        .request_to_channel_with(CHANNEL, &Echo { text: "hi".into() }, opts)
        .await
        .unwrap();
    assert_eq!(reply, Echoed { text: "hi".into(), by: "a".into(), trace: Some("t-1".into()) });
    c.shutdown().await;
    a.shutdown().await;
}
