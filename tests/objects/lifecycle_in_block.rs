//! Lifecycle hooks written as marked methods of the `#[actor]` / `#[spot]` block: the
//! macro writes the `Actor` / `Spot` impl, and each hook runs when its trait method would.

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use zlink::object::{ActorContext, ClosingReason, SpotContext};
use zlink::store::LocationStore;
use zlink::Runtime;

type Log = Arc<Mutex<Vec<String>>>;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Seen)]
pub struct Ask;

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
pub struct Seen(pub Vec<String>);

/// An Actor with its hooks in the block (and no `impl Actor` anywhere).
pub struct Greeter {
    log: Log,
}

#[zlink::actor(type = "greeter", relocation = disable)]
impl Greeter {
    #[handler]
    async fn ask(&mut self, _ask: Ask, _ctx: &ActorContext) -> zlink::Result<Seen> {
        Ok(Seen(self.log.lock().unwrap().clone()))
    }

    #[on_initialize]
    async fn hello(&mut self, ctx: &ActorContext) -> zlink::Result<()> {
        self.log
            .lock()
            .unwrap()
            .push(format!("initialized {}", ctx.id()));
        Ok(())
    }

    #[on_closing]
    async fn bye(&mut self, reason: ClosingReason, _ctx: &ActorContext) {
        self.log.lock().unwrap().push(format!("closing {reason:?}"));
    }
}

/// A Spot with its hooks in the block.
pub struct Lamp {
    log: Log,
}

#[zlink::spot(type = "lamp", relocation = disable)]
impl Lamp {
    #[handler]
    async fn ask(&mut self, _ask: Ask, _ctx: &SpotContext) -> zlink::Result<Seen> {
        Ok(Seen(self.log.lock().unwrap().clone()))
    }

    #[on_initialize]
    async fn on(&mut self, _ctx: &SpotContext) -> zlink::Result<()> {
        self.log.lock().unwrap().push("lit".into());
        Ok(())
    }

    #[on_closing]
    async fn off(&mut self, reason: ClosingReason, _ctx: &SpotContext) {
        self.log.lock().unwrap().push(format!("out {reason:?}"));
    }
}

#[tokio::test]
async fn hooks_marked_in_the_block_run_as_the_trait_would_run_them() -> zlink::Result<()> {
    let (greeter_log, lamp_log) = (Log::default(), Log::default());
    let (g, l) = (greeter_log.clone(), lamp_log.clone());
    let rt = Runtime::builder()
        .mesh_name("lifecycle")
        .listen("tcp://127.0.0.1:0")
        .location_store(<dyn LocationStore>::in_memory())
        .actor_type(Greeter::actor_type(move |_| Greeter { log: g.clone() })?)
        .spot_type(Lamp::spot_type(move |_| Lamp { log: l.clone() })?)
        .build()?
        .start()
        .await?;
    rt.actors().ready(Greeter::STABLE_TYPE, 1).await?;

    let greeter = GreeterClient::get_or_create(&rt, "ann").await?;
    assert_eq!(greeter.ask(Ask).await?.0, ["initialized ann"]);
    let lamp = LampClient::get_or_create(&rt, "desk").await?;
    assert_eq!(lamp.ask(Ask).await?.0, ["lit"]);

    let ann = rt.actors().find("ann").await?.expect("ann exists");
    assert!(rt.actors().destroy(&ann).await?);
    let desk = rt.spots().find("desk").await?.expect("desk exists");
    assert!(rt.spots().close(&desk).await?);
    assert_eq!(
        greeter_log.lock().unwrap().last().map(String::as_str),
        Some("closing Destroyed")
    );
    assert_eq!(
        lamp_log.lock().unwrap().last().map(String::as_str),
        Some("out ExplicitClose")
    );
    rt.shutdown().await;
    Ok(())
}
