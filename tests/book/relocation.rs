//! The code shown in the book's "Relocation" chapter: a `preserve` Actor with its state
//! adapter, a live move by ID, and a node relocating everything before it stops, over
//! real TCP on 127.0.0.1 with a private `redis-server`.

use serde::{Deserialize, Serialize};
use zlink::Runtime;
use zlink_testkit::{wait_until, RedisServer};
use zlink_tests::WAIT;

zlink_book_snippets::snippet!("relocation.md", "wallet");

async fn wallet_node(rid: &str, redis_url: &str) -> zlink::Result<Runtime> {
    zlink_book_snippets::statements!("relocation.md", "node");
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

    zlink_book_snippets::statements!("relocation.md", "relocate");

    zlink_book_snippets::statements!("relocation.md", "drain");
    let balance = WalletClient::new(&a, &id).deposit(Deposit(1)).await?;
    assert_eq!((balance.coins, balance.node.as_str()), (16, "a"));

    zlink_book_snippets::statements!("relocation.md", "lost_one_ways");
    assert_eq!(lost.total(), 0, "nothing was lost in this chapter's moves");
    a.shutdown().await;
    Ok(())
}
