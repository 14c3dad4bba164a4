use getting_started::{Add, Tally, TallyClient};
use zlink::store::LocationStore;
use zlink::{Bytes, Runtime};

#[tokio::main]
async fn main() -> zlink::Result<()> {
    // Both nodes run in this process, so they share the embedded Location Store.
    let store = <dyn LocationStore>::in_memory();

    // The node that runs Tallies.
    let server = Runtime::builder()
        .mesh_name("tutorial")
        .rid("tallies-1")
        .listen("tcp://127.0.0.1:0")
        .location_store(store.clone())
        .spot_type(Tally::spot_type(|_ctx| Tally::default())?)
        .build()?
        .start()
        .await?;

    // A node that runs nothing and calls Tallies by ID.
    let caller = Runtime::builder()
        .mesh_name("tutorial")
        .rid("caller")
        .listen("tcp://127.0.0.1:0")
        .location_store(store)
        .build()?
        .start()
        .await?;

    // Wait until a node that runs Tallies is known and connected, then create one.
    caller.spots().ready(Tally::STABLE_TYPE, 1).await?;
    caller
        .spots()
        .get_or_create("visits", Tally::STABLE_TYPE, Bytes::new())
        .await?;

    // Call it by ID: the caller finds its owner through the store, then remembers it.
    let visits = TallyClient::new(&caller, "visits");
    visits.add(Add(2)).await?;
    let total = visits.add(Add(3)).await?;
    println!("visits = {}", total.0);

    caller.shutdown().await;
    server.shutdown().await;
    Ok(())
}
