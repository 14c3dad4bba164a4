//! A browser's side of the game, as the page speaks it: STREAM over WebSocket to the
//! gateway, JSON payloads.

use std::time::Duration;

use tokio::sync::mpsc::Receiver;
use zlink_examples::chat::client::{connect, ChatClient, Incoming, Transport, RESPONSE, SEND};
use zlink_examples::zone_world::messages::{Ack, View, Welcome};

/// How many views a browser keeps while it waits for something else.
const KEPT_VIEWS: usize = 100;

/// One connected browser, logged in as a player.
pub struct Browser {
    client: ChatClient,
    incoming: Receiver<Incoming>,
    /// Views that arrived while acks were awaited, oldest first.
    pub views: Vec<View>,
}

impl Browser {
    /// Connects to the gateway at `address` and logs in as `name`.
    pub async fn login(address: &str, name: &str) -> (Browser, Welcome) {
        let (client, incoming) = connect(address, Transport::WebSocket)
            .await
            .expect("connected");
        let mut browser = Browser {
            client,
            incoming,
            views: Vec::new(),
        };
        let login = serde_json::json!({ "name": name });
        browser
            .client
            .request(1, "login", &login)
            .await
            .expect("login sent");
        let welcome = browser
            .next(|p| p.kind == RESPONSE && p.seq == Some(1))
            .await;
        let welcome = serde_json::from_slice(&welcome.payload).expect("a welcome");
        (browser, welcome)
    }

    /// Sends move `seq` by (`dx`, `dy`).
    pub async fn step(&self, seq: u64, dx: i32, dy: i32) {
        let step = serde_json::json!({ "seq": seq, "dx": dx, "dy": dy });
        self.client.send("move", &step).await.expect("move sent");
    }

    /// The next packet that satisfies `wanted` within 10 s (views on the way are kept).
    async fn next(&mut self, wanted: impl Fn(&Incoming) -> bool) -> Incoming {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let packet = tokio::time::timeout_at(deadline, self.incoming.recv())
                .await
                .expect("the awaited packet arrived within 10 s")
                .expect("the connection stayed open");
            if packet.kind == SEND && packet.name == "view" {
                let view = serde_json::from_slice(&packet.payload).expect("a view");
                if self.views.len() == KEPT_VIEWS {
                    self.views.remove(0);
                }
                self.views.push(view);
            }
            if wanted(&packet) {
                return packet;
            }
        }
    }

    /// Every ack until the ack of move `last`, in arrival order.
    pub async fn acks_until(&mut self, last: u64) -> Vec<Ack> {
        let mut acks = Vec::new();
        while acks.last().map(|ack: &Ack| ack.seq) != Some(last) {
            let packet = self.next(|p| p.kind == SEND && p.name == "ack").await;
            acks.push(serde_json::from_slice(&packet.payload).expect("an ack"));
        }
        acks
    }

    /// The next view that satisfies `done` (views already received count).
    pub async fn view_until(&mut self, done: impl Fn(&View) -> bool) -> View {
        if let Some(at) = self.views.iter().rposition(&done) {
            return self.views.swap_remove(at);
        }
        loop {
            let packet = self.next(|p| p.kind == SEND && p.name == "view").await;
            let view: View = serde_json::from_slice(&packet.payload).expect("a view");
            if done(&view) {
                return view;
            }
        }
    }
}
