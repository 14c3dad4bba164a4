//! The log lines the Failures chapter names are the ones a node writes: a one-way with no
//! handler on a channel (`no_handler`) and on a Spot (`an accepted one-way message was
//! lost`, `reason=NoHandler`), and a one-way whose handler fails (`send handler failed`).

use serde::{Deserialize, Serialize};
use zlink::object::{Spot, SpotContext};
use zlink::{Error, ErrorKind, Handlers, PeerSpec};
use zlink_testkit::{wait_until, LogCapture};
use zlink_tests::{node, start, Echo, Echoed, WAIT};

/// A one-way nobody handles.
#[derive(Serialize, Deserialize, zlink::Message)]
pub struct Unheard;

/// A one-way whose handler fails.
#[derive(Serialize, Deserialize, zlink::Message)]
pub struct Refused;

/// A Spot that answers echoes and handles no one-way.
#[derive(Default)]
pub struct Quiet;

#[zlink::spot(type = "quiet", relocation = disable)]
impl Quiet {
    #[handler]
    async fn echo(&mut self, echo: Echo, _ctx: &SpotContext) -> zlink::Result<Echoed> {
        Ok(Echoed {
            text: echo.text,
            by: "quiet".into(),
            trace: None,
        })
    }
}

impl Spot for Quiet {}

#[tokio::test]
async fn the_failures_chapters_log_lines_are_the_ones_a_node_writes() {
    let logs = LogCapture::warnings();
    let store = <dyn zlink::store::LocationStore>::in_memory();
    let handlers = Handlers::new().on_send(|_ctx, _refused: Refused| async {
        Err::<(), _>(Error::new(ErrorKind::Rejected, "refused on purpose"))
    });
    let server = start(
        node("logged-server")
            .location_store(store.clone())
            .channel_server("logged", handlers)
            .spot_type(Quiet::spot_type(|_| Quiet).unwrap()),
    )
    .await;
    let caller = start(
        node("logged-caller")
            .location_store(store)
            .channel_client("logged")
            .peer(PeerSpec::new(server.endpoint()).expect_rid(server.rid())),
    )
    .await;
    caller.channels().ready("logged", 1).await.unwrap();
    caller.spots().ready(Quiet::STABLE_TYPE, 1).await.unwrap();
    caller
        .spots()
        .get_or_create("q", Quiet::STABLE_TYPE, bytes::Bytes::new())
        .await
        .unwrap();

    let expect = |what: &'static str, texts: &'static [&'static str]| {
        let logs = &logs;
        async move {
            wait_until(WAIT, what, || async {
                logs.lines()
                    .iter()
                    .any(|line| texts.iter().all(|t| line.contains(t)))
            })
            .await;
        }
    };
    caller.channels().send("logged", &Unheard).await.unwrap();
    expect("a channel one-way with no handler", &["no_handler"]).await;
    caller.channels().send("logged", &Refused).await.unwrap();
    expect(
        "a channel one-way whose handler failed",
        &["send handler failed", "refused on purpose"],
    )
    .await;
    caller.spots().send("q", &Unheard).await.unwrap();
    expect(
        "a Spot one-way with no handler",
        &["an accepted one-way message was lost", "NoHandler"],
    )
    .await;
    caller.shutdown().await;
    server.shutdown().await;
}
