//! The code shown in the book's "Security" chapter, run over real TCP and a private
//! `redis-server`.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::HandlerContext;
use zlink_testkit::RedisServer;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Balance)]
pub struct GetBalance(pub String);

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Balance(pub i64);

#[derive(Clone)]
pub struct Ledger;

#[zlink::channel(server, name = "ledger")]
impl Ledger {
    #[handler]
    async fn balance(&self, _q: GetBalance, _ctx: &HandlerContext) -> zlink::Result<Balance> {
        Ok(Balance(42))
    }
}

#[tokio::test]
async fn security_chapter_keys() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("zlink-book-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("ledger-1.key");
    zlink_book_snippets::statements!("security.md", "keys");
    std::fs::remove_dir_all(dir).ok();
    Ok(())
}

#[tokio::test]
async fn security_chapter_mesh() -> zlink::Result<()> {
    let redis = RedisServer::start().expect("redis-server");
    let redis_url = redis.url();
    zlink_book_snippets::statements!("security.md", "mesh");
    teller
        .nodes()
        .wait_for(Duration::from_secs(10), |p| !p.is_empty())
        .await?;
    let balance = LedgerClient::on_default_channel(&teller)
        .balance(&GetBalance("alice".into()))
        .await?;
    assert_eq!(balance.0, 42);
    teller.shutdown().await;
    ledger.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn security_chapter_manual() -> zlink::Result<()> {
    zlink_book_snippets::statements!("security.md", "manual");
    teller
        .nodes()
        .wait_for(Duration::from_secs(10), |p| !p.is_empty())
        .await?;
    let balance = LedgerClient::on_default_channel(&teller)
        .balance(&GetBalance("bob".into()))
        .await?;
    assert_eq!(balance.0, 42);
    teller.shutdown().await;
    ledger.shutdown().await;
    Ok(())
}

#[test]
fn security_chapter_plaintext_rule() {
    zlink_book_snippets::statements!("security.md", "plaintext");
}

#[test]
fn security_chapter_limits() {
    zlink_book_snippets::statements!("security.md", "limits");
    assert!(config.is_ok());
}
