use getting_started::{Add, Tally, TallyClient};
use zlink_testkit::TestCluster;

#[tokio::test]
async fn a_tally_adds_up_whichever_node_calls_it() {
    // Three nodes in one test, on an in-memory network and store; node 0 runs Tallies.
    let cluster = TestCluster::in_memory(3, |i, node| {
        if i == 0 {
            node.spot_type(Tally::spot_type(|_| Tally::default()).expect("a Spot type"))
        } else {
            node
        }
    })
    .await;
    let (one, two) = (cluster.node(1), cluster.node(2));
    one.spots().ready(Tally::STABLE_TYPE, 1).await.unwrap();
    let from_one = TallyClient::get_or_create(one, "visits").await.unwrap();

    assert_eq!(from_one.add(Add(2)).await.unwrap().0, 2);
    assert_eq!(
        TallyClient::new(two, "visits").add(Add(3)).await.unwrap().0,
        5
    );
    cluster.shutdown().await;
}
