//! Bots: chat clients that log in over TCP or WebSocket, join a room and talk, and check
//! what they hear: every line of their room from the moment they joined, once, in the
//! room's order, on a connection that never closed.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::json;
use tokio::sync::watch;
use tokio::time::Instant;

use super::client::{self, ChatClient, Incoming, Transport, ERROR, SEND};

/// How long a bot waits for an answer or for its room's last line.
const WAIT: Duration = Duration::from_secs(5);

/// What a bot saw.
#[derive(Debug, Clone)]
pub struct BotReport {
    /// The bot's player name.
    pub name: String,
    /// Its room.
    pub room: String,
    /// How it connected.
    pub transport: Transport,
    /// Lines it said.
    pub said: u64,
    /// Lines of its room it heard.
    pub heard: u64,
    /// Line numbers it never heard.
    pub missing: u64,
    /// Lines it heard twice, or after a later one.
    pub repeated_or_reordered: u64,
    /// The nodes its player pushed from, in the order they did.
    pub nodes: Vec<String>,
    /// The longest time between two lines it heard.
    pub longest_silence: Duration,
    /// Whether the gateway closed its connection before it was done.
    pub disconnected: bool,
}

impl BotReport {
    /// Whether everything held: nothing missing, repeated or reordered, still connected.
    pub fn is_whole(&self) -> bool {
        self.missing == 0 && self.repeated_or_reordered == 0 && !self.disconnected
    }
}

/// When to stop talking: the last line number of each room, once known.
pub type StopAt = watch::Receiver<Option<BTreeMap<String, u64>>>;

/// Runs one bot at `address` until `stop` names its room's last line and it heard it.
pub async fn run(
    address: String,
    transport: Transport,
    name: String,
    room: String,
    mut stop: StopAt,
) -> Result<BotReport, String> {
    let (chat, mut rx) = client::connect(&address, transport)
        .await
        .map_err(|e| format!("{name}: connect: {e}"))?;
    let mut early = Vec::new();
    call(
        &chat,
        &mut rx,
        1,
        "login",
        json!({ "name": name }),
        &mut early,
    )
    .await?;
    let joined = call(
        &chat,
        &mut rx,
        2,
        "join",
        json!({ "room": room }),
        &mut early,
    )
    .await?;
    let mut report = BotReport {
        name: name.clone(),
        room: room.clone(),
        transport,
        said: 0,
        heard: 0,
        missing: 0,
        repeated_or_reordered: 0,
        nodes: Vec::new(),
        longest_silence: Duration::ZERO,
        disconnected: false,
    };
    let mut hearing = Hearing {
        next: joined["next_seq"].as_u64().unwrap_or(1),
        last_heard: None,
    };
    for packet in early {
        hearing.take(&packet, &mut report);
    }
    let mut talk = tokio::time::interval(Duration::from_millis(20));
    let last = loop {
        tokio::select! {
            _ = talk.tick() => {
                report.said += 1;
                let text = format!("{name} #{}", report.said);
                if chat.send("say", &json!({ "text": text })).await.is_err() {
                    report.disconnected = true;
                    return Ok(report);
                }
            }
            packet = rx.recv() => match packet {
                Some(packet) => hearing.take(&packet, &mut report),
                None => {
                    report.disconnected = true;
                    return Ok(report);
                }
            },
            changed = stop.changed() => {
                let known = stop.borrow().as_ref().and_then(|last| last.get(&room).copied());
                match (changed, known) {
                    (_, Some(last)) => break last,
                    (Err(_), None) => return Err(format!("{name}: nobody said when to stop")),
                    (Ok(()), None) => {}
                }
            }
        }
    };
    // The room's last line was said: hear up to it.
    let deadline = Instant::now() + WAIT;
    while hearing.next <= last {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(packet)) => hearing.take(&packet, &mut report),
            Ok(None) => {
                report.disconnected = true;
                break;
            }
            Err(_) => break,
        }
    }
    report.missing += (last + 1).saturating_sub(hearing.next);
    // A failed close is the gateway's closing first: the report already says so.
    let _ = chat.close().await;
    Ok(report)
}

/// One request's answer, or why there is none.
async fn call(
    chat: &ChatClient,
    rx: &mut tokio::sync::mpsc::Receiver<Incoming>,
    seq: u64,
    name: &str,
    value: serde_json::Value,
    early: &mut Vec<Incoming>,
) -> Result<serde_json::Value, String> {
    chat.request(seq, name, &value)
        .await
        .map_err(|e| format!("{name}: {e}"))?;
    let answer = client::answer(rx, seq, WAIT, early).await?;
    if answer.kind == ERROR {
        return Err(format!("{name} failed: {}", answer.json()));
    }
    Ok(answer.json())
}

/// The line numbers a bot expects next.
struct Hearing {
    next: u64,
    last_heard: Option<Instant>,
}

impl Hearing {
    fn take(&mut self, packet: &Incoming, report: &mut BotReport) {
        if packet.kind != SEND || packet.name != "line" {
            return;
        }
        let line = packet.json();
        let seq = line["seq"].as_u64().unwrap_or(0);
        if seq < self.next {
            report.repeated_or_reordered += 1;
            return;
        }
        report.missing += seq - self.next;
        self.next = seq + 1;
        report.heard += 1;
        let now = Instant::now();
        if let Some(before) = self.last_heard.replace(now) {
            report.longest_silence = report.longest_silence.max(now - before);
        }
        if let Some(via) = line["via"].as_str() {
            if report.nodes.last().map(String::as_str) != Some(via) {
                report.nodes.push(via.to_string());
            }
        }
    }
}

/// The players that ran on more than one node.
pub fn moved(reports: &[BotReport]) -> BTreeSet<&str> {
    reports
        .iter()
        .filter(|r| r.nodes.len() > 1)
        .map(|r| r.name.as_str())
        .collect()
}
