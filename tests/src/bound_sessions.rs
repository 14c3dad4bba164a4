//! The bound-session cluster the session and conformance tests share: a gateway node whose
//! sessions log a player in (bind) and relay the rest to it, and a players node.

use std::time::Duration;

use zlink::object::ActorRef;
use zlink::session::StreamListener;
use zlink_testkit::TestCluster;

zlink_book_snippets::snippet!("sessions.md", "actor");

zlink_book_snippets::snippet!("sessions.md", "gateway");

/// The players node's Entry Spot hooks: which Actors' sessions disconnected.
#[derive(Clone, Default)]
pub struct Disconnects(pub std::sync::Arc<std::sync::Mutex<Vec<String>>>);

#[zlink::async_trait]
impl zlink::object::EntryHooks for Disconnects {
    async fn on_disconnect_actor(&mut self, _ctx: &zlink::object::SpotContext, actor: &ActorRef) {
        self.0.lock().unwrap().push(actor.id.to_string());
    }
}

/// [`cluster`], with n1's Entry Spot recording into `disconnects` every session end it
/// hears.
pub async fn cluster_with(disconnects: &Disconnects) -> (TestCluster, String) {
    let heard = disconnects.clone();
    let cluster = TestCluster::on_tcp_with_redis(2, move |i, node| {
        if i == 0 {
            node.route_cache_max_age(Duration::ZERO).stream_listener(
                StreamListener::new("clients")
                    .bind("tcp://127.0.0.1:0")
                    .session(Gateway::default),
            )
        } else {
            let heard = heard.clone();
            node.actor_type(Player::actor_type(|_| Player::default()).expect("an Actor type"))
                .entry_hooks(move || heard.clone())
        }
    })
    .await;
    cluster
        .node(0)
        .actors()
        .ready(Player::STABLE_TYPE, 1)
        .await
        .expect("n1 takes players");
    let endpoint = cluster.node(0).stream_endpoint("clients").expect("bound");
    (cluster, endpoint.trim_start_matches("tcp://").to_string())
}

/// n0: the gateway, with no route cache (any direct call reads the store); n1: players.
pub async fn cluster() -> (TestCluster, String) {
    cluster_with(&Disconnects::default()).await
}

/// `gateways` nodes (n0..) whose STREAM listener "clients" runs [`Gateway`] sessions,
/// then `players` nodes serving [`Player`] Actors, on real TCP and Redis.
pub async fn gateways_and_players(gateways: usize, players: usize) -> TestCluster {
    TestCluster::on_tcp_with_redis(gateways + players, move |i, node| {
        if i < gateways {
            node.stream_listener(
                StreamListener::new("clients")
                    .bind("tcp://127.0.0.1:0")
                    .session(Gateway::default),
            )
        } else {
            node.actor_type(Player::actor_type(|_| Player::default()).expect("an Actor type"))
        }
    })
    .await
}
