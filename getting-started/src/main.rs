use getting_started::{Add, Tally, TallyClient};
use zlink::store::LocationStore;
use zlink::Runtime;

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

    // Wait until a node that runs Tallies is known and connected.
    caller.spots().ready(Tally::STABLE_TYPE, 1).await?;

    // The Tally "visits" exists after this call (found, or created on a node that runs
    // Tallies), and the client calls it by ID: the caller finds its owner through the
    // store, then remembers it.
    let visits = TallyClient::get_or_create(&caller, "visits").await?;
    visits.add(Add(2)).await?;
    let total = visits.add(Add(3)).await?;
    println!("visits = {}", total.0);

    caller.shutdown().await;
    server.shutdown().await;
    Ok(())
}
