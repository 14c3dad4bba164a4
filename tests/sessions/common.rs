//! A chat-like session type and a node that serves it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::session::{
    CloseReason, Packet, SessionContext, StreamLimits, StreamListener, TlsIdentity,
};
use zlink::{ErrorKind, Runtime};

pub const WAIT: Duration = Duration::from_secs(5);

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "echo", codec = zlink::Json, reply = Echoed)]
pub struct Echo {
    pub text: String,
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "echoed", codec = zlink::Json)]
pub struct Echoed {
    pub text: String,
    pub count: u64,
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "note", codec = zlink::Json)]
pub struct Note {
    pub text: String,
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "fail", codec = zlink::Json, reply = Echoed)]
pub struct Fail {
    pub kind: String,
}

#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "flood", codec = zlink::Json)]
pub struct Flood {
    pub packets: usize,
    pub bytes: usize,
}

/// Asks the server to close the session, saying `why`.
#[derive(Serialize, Deserialize, zlink::Message)]
#[message(name = "leave", codec = zlink::Json)]
pub struct Leave {
    pub why: String,
}

/// What every session of a test's listener reports.
#[derive(Default)]
pub struct Counters {
    pub connected: AtomicUsize,
    pub disconnected: AtomicUsize,
    pub notes: AtomicUsize,
    pub reasons: std::sync::Mutex<Vec<CloseReason>>,
}

impl Counters {
    pub fn reasons(&self) -> Vec<CloseReason> {
        self.reasons.lock().unwrap().clone()
    }
}

/// A session that echoes, counts notes, fails on request and floods its client.
pub struct Chat {
    pub counters: Arc<Counters>,
    pub echoes: u64,
}

#[zlink::session]
impl Chat {
    #[on_connected]
    async fn connected(&mut self, _ctx: &SessionContext) -> zlink::Result<()> {
        self.counters.connected.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    #[handler]
    async fn echo(&mut self, echo: Echo, _ctx: &SessionContext) -> zlink::Result<Echoed> {
        self.echoes += 1;
        Ok(Echoed {
            text: echo.text,
            count: self.echoes,
        })
    }

    #[handler]
    async fn leave(&mut self, leave: Leave, ctx: &SessionContext) -> zlink::Result<()> {
        ctx.close_because(&leave.why);
        Ok(())
    }

    #[handler]
    async fn note(&mut self, note: Note, ctx: &SessionContext) -> zlink::Result<()> {
        self.counters.notes.fetch_add(1, Ordering::SeqCst);
        ctx.send(&Note {
            text: format!("heard {}", note.text),
        })
        .await
    }

    #[handler]
    async fn fail(&mut self, fail: Fail, _ctx: &SessionContext) -> zlink::Result<Echoed> {
        let kind = match fail.kind.as_str() {
            "rejected" => ErrorKind::Rejected,
            _ => ErrorKind::InvalidOperation,
        };
        Err(zlink::Error::new(
            kind,
            format!("asked to fail: {}", fail.kind),
        ))
    }

    #[handler]
    async fn flood(&mut self, flood: Flood, ctx: &SessionContext) -> zlink::Result<()> {
        let text = "x".repeat(flood.bytes);
        for _ in 0..flood.packets {
            ctx.send(&Note { text: text.clone() }).await?;
        }
        Ok(())
    }

    #[on_packet]
    async fn other(&mut self, mut packet: Packet, _ctx: &SessionContext) -> zlink::Result<()> {
        let token = packet.take_reply();
        match (packet.name(), token) {
            ("raw-echo", Some(token)) => {
                token
                    .reply_bytes(packet.codec(), packet.payload().clone())
                    .await
            }
            (name, _) => Err(zlink::Error::new(
                ErrorKind::NotFound,
                format!("no packet {name:?} here"),
            )),
        }
    }

    #[on_disconnected]
    async fn disconnected(&mut self, reason: CloseReason, _ctx: &SessionContext) {
        self.counters.reasons.lock().unwrap().push(reason);
        self.counters.disconnected.fetch_add(1, Ordering::SeqCst);
    }
}

/// A node with one `Chat` listener at `scheme://127.0.0.1:0`.
pub async fn chat_node(scheme: &str, limits: StreamLimits) -> (Runtime, Arc<Counters>, String) {
    chat_node_with(scheme, limits, None).await
}

/// The same, serving TLS with `tls` when given.
pub async fn chat_node_with(
    scheme: &str,
    limits: StreamLimits,
    tls: Option<TlsIdentity>,
) -> (Runtime, Arc<Counters>, String) {
    zlink_testkit::init_tracing();
    let counters = Arc::new(Counters::default());
    let made = counters.clone();
    let mut listener = StreamListener::new("clients")
        .bind(format!("{scheme}://127.0.0.1:0"))
        .limits(limits)
        .session(move || Chat {
            counters: made.clone(),
            echoes: 0,
        });
    if let Some(tls) = tls {
        listener = listener.tls(tls);
    }
    let runtime = Runtime::builder()
        .mesh_name("sessions")
        .listen("tcp://127.0.0.1:0")
        .stream_listener(listener)
        .build()
        .expect("valid settings")
        .start()
        .await
        .expect("node starts");
    let endpoint = runtime.stream_endpoint("clients").expect("listener bound");
    let address = endpoint
        .split_once("://")
        .map(|(_, a)| a.to_string())
        .expect("scheme://host:port");
    (runtime, counters, address)
}
