//! The code of the Spots chapter's "Timers" section: a Spot that counts its own beats.

use std::time::Duration;

zlink_book_snippets::snippet!("spots.md", "timer");

#[tokio::test]
async fn a_heartbeat_beats_on_its_own() -> zlink::Result<()> {
    let store = <dyn zlink::store::LocationStore>::in_memory();
    let rt = zlink::Runtime::builder()
        .mesh_name("book")
        .listen("tcp://127.0.0.1:0")
        .location_store(store)
        .spot_type(Heartbeat::spot_type(|_| Heartbeat::default())?)
        .build()?
        .start()
        .await?;
    rt.spots().ready(Heartbeat::STABLE_TYPE, 1).await?;
    rt.spots()
        .get_or_create("pulse", Heartbeat::STABLE_TYPE, zlink::Bytes::new())
        .await?;
    let pulse = HeartbeatClient::new(&rt, "pulse");
    zlink_testkit::wait_until(Duration::from_secs(5), "three beats", || async {
        pulse.count(CountBeats).await.is_ok_and(|b| b.0 >= 3)
    })
    .await;
    rt.shutdown().await;
    Ok(())
}
