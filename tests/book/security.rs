//! The code shown in the book's "Security" chapter, run over real TCP and a private
//! `redis-server`.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::{HandlerContext, Runtime};
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
    // ANCHOR: keys
    use zlink::security::CurveKeypair;

    // Once per node, at provisioning time: a keypair, saved as a key file (mode 0600).
    let keys = CurveKeypair::generate();
    keys.write_file(&path)?;
    println!("public key of this node: {}", keys.public());

    // At start: load it back (a Z85 secret from a secret store works too).
    let keys = CurveKeypair::from_file(&path)?;
    let same = CurveKeypair::from_secret_z85(&keys.secret_z85())?;
    assert_eq!(same.public(), keys.public());
    // ANCHOR_END: keys
    std::fs::remove_dir_all(dir).ok();
    Ok(())
}

#[tokio::test]
async fn security_chapter_mesh() -> zlink::Result<()> {
    let redis = RedisServer::start().expect("redis-server");
    let redis_url = redis.url();
    // ANCHOR: mesh
    use std::sync::Arc;
    use zlink::security::CurveKeypair;
    use zlink::store::{LocationStore, RedisLocationStore, RedisOptions};

    let store: Arc<dyn LocationStore> = Arc::new(RedisLocationStore::new(RedisOptions::new(
        &redis_url, "bank",
    ))?);
    // Each node runs CURVE with its own keypair. With a Location Store the default trust
    // is "the keys live members of this mesh publish": each node's descriptor carries its
    // public key, and every listener admits exactly those keys.
    let ledger = Runtime::builder()
        .mesh_name("bank")
        .listen("tcp://127.0.0.1:0")
        .location_store(store.clone())
        .curve(CurveKeypair::generate())
        .serve(Ledger)
        .build()?
        .start()
        .await?;
    let teller = Runtime::builder()
        .mesh_name("bank")
        .listen("tcp://127.0.0.1:0")
        .location_store(store.clone())
        .curve(CurveKeypair::generate())
        .channel_client("ledger")
        .build()?
        .start()
        .await?;
    // ANCHOR_END: mesh
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
    // ANCHOR: manual
    use zlink::security::{CurveKeypair, Trust};
    use zlink::PeerSpec;

    let ledger_keys = CurveKeypair::generate();
    let teller_keys = CurveKeypair::generate();
    // Without a store, say whom a listener admits, and which key a dialed peer must prove.
    let ledger = Runtime::builder()
        .mesh_name("bank")
        .listen("tcp://127.0.0.1:0")
        .curve(ledger_keys.clone())
        .trust(Trust::Keys(vec![teller_keys.public()]))
        .serve(Ledger)
        .build()?
        .start()
        .await?;
    let teller = Runtime::builder()
        .mesh_name("bank")
        .listen("tcp://127.0.0.1:0")
        .curve(teller_keys)
        .trust_key(ledger_keys.public())
        .peer(PeerSpec::new(ledger.endpoint()).server_key(ledger_keys.public()))
        .channel_client("ledger")
        .build()?
        .start()
        .await?;
    // ANCHOR_END: manual
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
    // ANCHOR: plaintext
    // Binding beyond loopback without CURVE is refused at build time ...
    let refused = Runtime::builder()
        .mesh_name("bank")
        .listen("tcp://0.0.0.0:7000")
        .advertise_host("10.0.0.5")
        .build();
    assert!(refused.is_err());
    // ... unless plaintext is asked for in so many words (a private network, a sidecar
    // that encrypts).
    let allowed = Runtime::builder()
        .mesh_name("bank")
        .listen("tcp://0.0.0.0:7000")
        .advertise_host("10.0.0.5")
        .allow_plaintext()
        .build();
    assert!(allowed.is_ok());
    // ANCHOR_END: plaintext
}

#[test]
fn security_chapter_limits() {
    // ANCHOR: limits
    use zlink::security::LinkLimits;

    let limits = LinkLimits {
        max_message: 1 << 20, // 1 MiB per inbound message
        max_connections: 512, // per listener
        max_pending: 64,      // connections not yet admitted, per listener
        handshake_timeout: Duration::from_secs(3),
        ..LinkLimits::default()
    };
    let config = Runtime::builder()
        .mesh_name("bank")
        .listen("tcp://127.0.0.1:0")
        .link_limits(limits)
        .build();
    // ANCHOR_END: limits
    assert!(config.is_ok());
}
