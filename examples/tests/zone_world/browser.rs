#![allow(dead_code)] // Shared by the scenario tests and the processes test: each uses its part.
//! A browser's side of the game, as the page speaks it: STREAM over WebSocket to the
//! gateway, JSON payloads.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::sync::mpsc::Receiver;
use zlink_examples::chat::client::{
    connect, ChatClient, Incoming, Transport, CONTROL, RESPONSE, SEND,
};
use zlink_examples::zone_world::messages::{Ack, View, Welcome};

/// How many views a browser keeps while it waits for something else.
const KEPT_VIEWS: usize = 100;
/// How many other packets it keeps while it waits for something else.
const KEPT_PACKETS: usize = 1_000;

/// One connected browser, logged in as a player.
pub struct Browser {
    client: ChatClient,
    incoming: Receiver<Incoming>,
    /// Views that arrived while acks were awaited, oldest first.
    pub views: Vec<View>,
    /// Other packets that arrived while something else was awaited, oldest first: a
    /// push may come before a reply sent earlier (they come by different ways).
    skipped: VecDeque<Incoming>,
}

impl Browser {
    /// Connects to the gateway at `address` and logs in as `name`.
    pub async fn login(address: &str, name: &str) -> (Browser, Welcome) {
        match Browser::try_login(address, name).await {
            Ok(logged_in) => logged_in,
            Err(e) => panic!("{name} could not log in: {e}"),
        }
    }

    /// [`login`](Self::login), or the error the gateway answered the login with.
    pub async fn try_login(address: &str, name: &str) -> Result<(Browser, Welcome), String> {
        let (client, incoming) = connect(address, Transport::WebSocket)
            .await
            .map_err(|e| e.to_string())?;
        let mut browser = Browser {
            client,
            incoming,
            views: Vec::new(),
            skipped: VecDeque::new(),
        };
        let login = serde_json::json!({ "name": name });
        browser
            .client
            .request(1, "login", &login)
            .await
            .map_err(|e| e.to_string())?;
        let answer = browser.next(|p| p.seq == Some(1)).await;
        if answer.kind != RESPONSE {
            return Err(String::from_utf8_lossy(&answer.payload).into_owned());
        }
        let welcome = serde_json::from_slice(&answer.payload).expect("a welcome");
        Ok((browser, welcome))
    }

    /// Sends move `seq` by (`dx`, `dy`).
    pub async fn step(&self, seq: u64, dx: i32, dy: i32) {
        let step = serde_json::json!({ "seq": seq, "dx": dx, "dy": dy });
        self.client.send("move", &step).await.expect("move sent");
    }

    /// The next packet that satisfies `wanted` within 10 s, skipped ones first (views on
    /// the way are kept, and so are the other packets it skips).
    async fn next(&mut self, wanted: impl Fn(&Incoming) -> bool) -> Incoming {
        if let Some(at) = self.skipped.iter().position(&wanted) {
            if let Some(packet) = self.skipped.remove(at) {
                return packet;
            }
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let packet = tokio::time::timeout_at(deadline, self.incoming.recv())
                .await
                .expect("the awaited packet arrived within 10 s")
                .expect("the connection stayed open");
            let is_view = packet.kind == SEND && packet.name == "view";
            if is_view {
                let view = serde_json::from_slice(&packet.payload).expect("a view");
                if self.views.len() == KEPT_VIEWS {
                    self.views.remove(0);
                }
                self.views.push(view);
            }
            if wanted(&packet) {
                return packet;
            }
            if !is_view {
                if self.skipped.len() == KEPT_PACKETS {
                    self.skipped.pop_front();
                }
                self.skipped.push_back(packet);
            }
        }
    }

    /// The session's end: the closing notice's reason and diagnostic.
    pub async fn closed(&mut self) -> (u8, String) {
        let notice = self
            .next(|p| p.kind == CONTROL && p.name == "session-closing")
            .await;
        let reason = notice.closing_reason().unwrap_or_default();
        let diagnostic = notice.payload.get(4..).unwrap_or_default();
        (reason, String::from_utf8_lossy(diagnostic).into_owned())
    }

    /// The next `welcome` push: where the player stands once it entered the world.
    pub async fn entered(&mut self) -> Welcome {
        let packet = self.next(|p| p.kind == SEND && p.name == "welcome").await;
        serde_json::from_slice(&packet.payload).expect("a welcome")
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
