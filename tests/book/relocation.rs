//! The code shown in the book's "Relocation" chapter: a `preserve` Actor with its state
//! adapter, a live move by ID, and a node relocating everything before it stops, over
//! real TCP on 127.0.0.1 with a private `redis-server`.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::Runtime;
use zlink_testkit::{wait_until, RedisServer};
use zlink_tests::WAIT;

// ANCHOR: wallet
use zlink::object::{Actor, ActorContext, RelocationState};

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Balance)]
pub struct Deposit(pub u64);

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Balance {
    pub coins: u64,
    pub node: String,
}

/// A player's wallet. Its coins must survive a move: `relocation = preserve`.
pub struct Wallet {
    coins: u64,
    node: String,
}

/// What moves: encoded with the framework's codec, versioned by the application.
#[derive(Serialize, Deserialize, zlink::Message)]
struct WalletState {
    version: u8,
    coins: u64,
}

impl RelocationState for Wallet {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        let state = WalletState {
            version: 1,
            coins: self.coins,
        };
        Ok(zlink::Message::encode(&state)?.to_vec())
    }

    fn restore(&mut self, state: &[u8]) -> zlink::Result<()> {
        let state: WalletState = zlink::Message::decode(state)?;
        self.coins = state.coins;
        Ok(())
    }
}

#[zlink::actor(type = "wallet", relocation = preserve)]
impl Wallet {
    #[handler]
    async fn deposit(&mut self, deposit: Deposit, _ctx: &ActorContext) -> zlink::Result<Balance> {
        self.coins += deposit.0;
        Ok(Balance {
            coins: self.coins,
            node: self.node.clone(),
        })
    }
}

impl Actor for Wallet {}
// ANCHOR_END: wallet

async fn wallet_node(rid: &str, redis_url: &str) -> zlink::Result<Runtime> {
    // ANCHOR: node
    use zlink::store::{RedisLocationStore, RedisOptions, RedisRelocationStore};

    let node = rid.to_string();
    let wallets = Wallet::actor_type(move |_ctx| Wallet {
        coins: 0,
        node: node.clone(),
    })?;
    let runtime = Runtime::builder()
        .mesh_name("game")
        .rid(rid)
        .listen("tcp://127.0.0.1:0")
        .location_store(Arc::new(RedisLocationStore::new(RedisOptions::new(
            redis_url, "game",
        ))?))
        // Types that move need a Relocation Store, shared by the nodes of the mesh (the
        // same Redis works; give it its own prefix).
        .relocation_store(Arc::new(RedisRelocationStore::new(RedisOptions::new(
            redis_url,
            "game-relocation",
        ))?))
        .actor_type(wallets)
        // How long a node relays what still arrives for an object that moved away
        // (the default; 0 turns Message Follow off).
        .message_follow_duration(Duration::from_secs(30))
        .build()?
        .start()
        .await?;
    // ANCHOR_END: node
    Ok(runtime)
}

#[tokio::test]
async fn relocation_chapter() -> zlink::Result<()> {
    let redis = RedisServer::start().expect("redis-server");
    let a = wallet_node("a", &redis.url()).await?;
    let b = wallet_node("b", &redis.url()).await?;
    for rt in [&a, &b] {
        wait_until(WAIT, "a and b see each other", || async {
            rt.discovery()
                .status()
                .is_some_and(|s| s.members.iter().any(|m| m.entry_spot.is_some()))
        })
        .await;
    }
    let mut id = String::new();
    for n in 0.. {
        let candidate = format!("w{n}");
        if a.actors().create(&candidate, "wallet").await?.rid == "a" {
            id = candidate;
            break;
        }
    }
    let wallet = WalletClient::new(&b, &id);
    assert_eq!(wallet.deposit(Deposit(10)).await?.coins, 10);

    // ANCHOR: relocate
    // On the node that runs it: move the Actor to b (or `None`: where placement says).
    let moved = a.actors().relocate(&id, Some("b")).await?;
    assert_eq!(moved.rid, "b");
    // Callers noticed nothing: same ID, same state, same incarnation.
    let balance = WalletClient::new(&a, &id).deposit(Deposit(5)).await?;
    assert_eq!((balance.coins, balance.node.as_str()), (15, "b"));
    // ANCHOR_END: relocate

    // ANCHOR: drain
    // Planned maintenance of b: move everything it runs, keep relaying for a moment
    // for callers that cached b, then stop.
    let report = b.drain(Duration::from_millis(200)).await?;
    assert!(
        report.is_complete(),
        "blocked {:?}, failed {:?}",
        report.blocked,
        report.failed
    );
    for actor in &report.moved {
        println!("{} now runs on {}", actor.id, actor.rid);
    }
    // ANCHOR_END: drain
    let balance = WalletClient::new(&a, &id).deposit(Deposit(1)).await?;
    assert_eq!((balance.coins, balance.node.as_str()), (16, "a"));

    // ANCHOR: lost_one_ways
    // One-way messages this node accepted and could not deliver, by reason.
    let lost = a.status().lost_one_ways;
    println!(
        "{} one-way(s) lost here, {} of them past the 8-hop Message Follow chain",
        lost.total(),
        lost.follow_hops
    );
    // ANCHOR_END: lost_one_ways
    assert_eq!(lost.total(), 0, "nothing was lost in this chapter's moves");
    a.shutdown().await;
    Ok(())
}
