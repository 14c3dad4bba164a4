//! ClientServer in one process: two servers of channel `quotes`, each on its own listener
//! with weights 100 and 300, and one client that connects to both and asks eight times.
//!
//! Run: `cargo run -p zlink-examples --bin client-server-demo`

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::client_server::ClientServerClient;
use zlink::security::CurvePublicKey;
use zlink::{ClientServer, HandlerContext, Runtime};
use zlink_examples::setup::{self, Security};

const USAGE: &str = "\
usage: client-server-demo
    Two ClientServer servers of channel \"quotes\" (weights 100 and 300), each on its own
    listener, and one client that connects to both and asks eight times.";

// ANCHOR: service
#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Quote)]
struct GetQuote {
    sku: String,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
struct Quote {
    cents: u64,
    by: String,
}

/// One quote server; `by` names it in every reply.
#[derive(Clone)]
struct Quotes {
    by: String,
}

#[zlink::channel(server, name = "quotes")]
impl Quotes {
    #[handler]
    async fn quote(&self, q: GetQuote, _ctx: &HandlerContext) -> zlink::Result<Quote> {
        let cents = 100 + q.sku.len() as u64;
        Ok(Quote {
            cents,
            by: self.by.clone(),
        })
    }
}
// ANCHOR_END: service

async fn server(rid: &str, weight: u32, security: Security) -> zlink::Result<Runtime> {
    // ANCHOR: server
    let builder = Runtime::builder()
        .mesh_name("shop")
        .rid(rid)
        .listen("tcp://127.0.0.1:0")
        .client_server(
            ClientServer::serve(Quotes { by: rid.into() })
                .listen("tcp://127.0.0.1:0") // its own listener; the real port is advertised
                .weight(weight),
        );
    // ANCHOR_END: server
    zlink_examples::operate::start(&security, builder).await
}

// ANCHOR: client_role
/// The Client role of `quotes`, connected to both servers. With CURVE, each connection
/// names the key its server must prove.
fn quotes_client(servers: [(&str, Option<CurvePublicKey>); 2]) -> ClientServerClient {
    let mut client = ClientServer::client("quotes");
    for (endpoint, server_key) in servers {
        client = match server_key {
            Some(key) => client.connect_curve(endpoint, key),
            None => client.connect(endpoint),
        };
    }
    client
}
// ANCHOR_END: client_role

#[tokio::main]
async fn main() -> ExitCode {
    let (security, rest) = match setup::begin("client-server-demo", USAGE) {
        Ok(begun) => begun,
        Err(code) => return code,
    };
    if let Err(code) = setup::no_more_args("client-server-demo", USAGE, &rest) {
        return code;
    }
    println!("{}", security.describe());
    match run(&security).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("client-server-demo: error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(security: &Security) -> zlink::Result<()> {
    let a = server("quotes-a", 100, security.node(0)).await?;
    let b = server("quotes-b", 300, security.node(1)).await?;
    let (ea, eb) = (
        a.channels()
            .client_server_endpoint("quotes")
            .unwrap_or_default(),
        b.channels()
            .client_server_endpoint("quotes")
            .unwrap_or_default(),
    );
    println!("quotes-a listens on {ea} (weight 100), quotes-b on {eb} (weight 300)");

    // ANCHOR: client
    let (key_a, key_b) = (security.key_of(0), security.key_of(1));
    let shop = Runtime::builder()
        .mesh_name("shop")
        .rid("shop")
        .listen("tcp://127.0.0.1:0")
        .client_server(quotes_client([(&ea, key_a), (&eb, key_b)]));
    let shop = zlink_examples::operate::start(&security.node(2), shop).await?;
    // Connections are made in the background; wait until both servers are ready so the
    // split follows the weights from the first call.
    shop.channels().ready("quotes", 2).await?;
    let quotes = QuotesClient::on_default_channel(&shop);
    let mut answered = BTreeMap::new();
    for _ in 0..8 {
        let quote = quotes.quote(&GetQuote { sku: "tea".into() }).await?;
        *answered.entry(quote.by).or_insert(0) += 1;
    }
    // ANCHOR_END: client
    for (by, n) in &answered {
        println!("{by} answered {n} of 8");
    }
    let ready = shop.channels().client_server_servers("quotes")?;
    println!(
        "the client sees {} ready server(s): {:?}",
        ready.len(),
        ready
            .iter()
            .map(|p| (&p.rid, p.weight("quotes")))
            .collect::<Vec<_>>()
    );
    tokio::time::timeout(Duration::from_secs(15), async {
        shop.shutdown().await;
        a.shutdown().await;
        b.shutdown().await;
    })
    .await
    .ok();
    Ok(())
}
