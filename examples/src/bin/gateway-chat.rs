//! Gateway chat: outside clients log in over TCP or WebSocket to a gateway node, their
//! sessions bound to player Actors on two player nodes, and chat in rooms on a hall node
//! (four nodes in this process, on the embedded stores).
//!
//! Run: `cargo run -p zlink-examples --bin gateway-chat -- --drain players-1`

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use zlink::session::TlsIdentity;
use zlink_examples::chat::bots::{self, BotReport};
use zlink_examples::chat::client::{self, Transport, ERROR, SEND};
use zlink_examples::chat::room::RoomClient;
use zlink_examples::chat::{messages, page, ChatMesh, ClientPorts, PLAYER_NODES};
use zlink_examples::setup::{self, Security};

const USAGE: &str = "\
usage:
  gateway-chat [--drain players-1|players-2]
      Four nodes in this process (gateway, hall, players-1, players-2). Eight bots log
      in to the gateway, half over TCP and half over WebSocket, and chat in two rooms.
      With --drain, that player node moves every player it runs to the other one while
      the bots keep talking; each bot then checks it heard every line of its room once,
      in order, on the connection it opened.

  gateway-chat --serve [--port PORT] [--tls-cert FILE --tls-key FILE] [--max-sessions N]
      The same four nodes until Ctrl-C. Clients connect to 127.0.0.1:PORT (TCP, default
      7450) and ws://127.0.0.1:PORT+1/ (WebSocket); a browser opens the chat page at
      http://127.0.0.1:PORT+2/. --port 0 takes free ports; every address is printed.
      With --tls-cert and --tls-key (PEM) both client listeners run inside TLS (tls://
      and wss://; the bundled client speaks plain TCP only, the JavaScript and Python
      clients speak TLS). --max-sessions caps the clients of each listener (default 20000).
      Type `drain players-1` (or players-2) to move that node's players away while the
      clients stay connected.

  gateway-chat client NAME ROOM [--addr HOST:PORT] [--ws]
      A chat client for --serve: logs in as NAME, joins ROOM, prints what is said there
      (with the node its player runs on), and says each line typed. `/where` asks
      where its player runs.

packets (JSON; see the book's Sessions chapter for the framing):
  client -> gateway  login    request {\"name\": NAME}  -> welcome {\"player\", \"node\"}
                                  binds the session to the player NAME (log in first)
  client -> player   join     request {\"room\": ROOM}  -> joined {\"room\", \"members\", \"next_seq\"}
                     say      one-way {\"text\": TEXT}
                     where    request null            -> here {\"node\"}
  player -> client   line     push {\"room\", \"seq\", \"from\", \"text\", \"via\"}
                                  seq counts the room's lines: a gap or repeat shows
  gateway -> client  replaced push {\"player\"}: NAME logged in elsewhere; this session ends";

/// How long the bots talk before and after the drain.
const TALK: Duration = Duration::from_millis(700);

#[tokio::main]
async fn main() -> ExitCode {
    let (security, args) = match setup::begin("gateway-chat", USAGE) {
        Ok(begun) => begun,
        Err(code) => return code,
    };
    let mode = match Mode::parse(&args) {
        Ok(mode) => mode,
        Err(e) => {
            eprintln!("gateway-chat: {e}\n\n{USAGE}\n\n{}", setup::COMMON_USAGE);
            return ExitCode::from(2);
        }
    };
    let outcome = match mode {
        Mode::Demo { drain } => {
            println!("{}", security.describe());
            demo(drain.as_deref(), &security).await
        }
        Mode::Serve(options) => {
            println!("{}", security.describe());
            serve(options, &security).await
        }
        Mode::Client {
            name,
            room,
            addr,
            transport,
        } => chat_client(&name, &room, &addr, transport).await,
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gateway-chat: error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn demo(drain: Option<&str>, security: &Security) -> Result<(), String> {
    if let Some(rid) = drain {
        if !PLAYER_NODES.contains(&rid) {
            return Err(format!(
                "--drain takes {} or {}, not {rid:?}",
                PLAYER_NODES[0], PLAYER_NODES[1]
            ));
        }
    }
    let ports = ClientPorts::default();
    let mesh = ChatMesh::start(&ports, security)
        .await
        .map_err(|e| e.to_string())?;
    let (tcp, ws) = mesh.addresses();
    println!("gateway: TCP clients at {tcp}, WebSocket clients at ws://{ws}/");
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(None);
    let rooms = ["lobby", "arena"];
    let mut running = Vec::new();
    for n in 1..=8usize {
        let (transport, address) = if n % 2 == 1 {
            (Transport::Tcp, tcp.clone())
        } else {
            (Transport::WebSocket, ws.clone())
        };
        let room = rooms[(n - 1) / 2 % 2].to_string();
        let name = format!("bot-{n}");
        running.push(tokio::spawn(bots::run(
            address,
            transport,
            name,
            room,
            stop_rx.clone(),
        )));
    }
    tokio::time::sleep(TALK).await;
    if let Some(rid) = drain {
        println!("Draining {rid} while the bots talk...");
        println!("  {}", mesh.drain(rid).await.map_err(|e| e.to_string())?);
        tokio::time::sleep(TALK).await;
    }
    // The rooms' last lines: the bots stop talking and hear up to them.
    let mut last = BTreeMap::new();
    for room in rooms {
        let tally = RoomClient::new(&mesh.gateway, room)
            .tally(&messages::Tally)
            .await
            .map_err(|e| e.to_string())?;
        last.insert(room.to_string(), tally.0);
    }
    // Lines said after the tally are not waited for; the bots stop saying them now.
    let _ = stop_tx.send(Some(last));
    let mut reports = Vec::new();
    for bot in running {
        reports.push(bot.await.map_err(|e| e.to_string())??);
    }
    print_reports(&reports, drain);
    mesh.shutdown().await;
    if reports.iter().all(BotReport::is_whole) {
        Ok(())
    } else {
        Err("a bot missed, repeated or reordered a line, or lost its connection".into())
    }
}

fn print_reports(reports: &[BotReport], drain: Option<&str>) {
    for r in reports {
        println!(
            "  {} ({:?}, {}): said {}, heard {} lines, {} missing, {} repeated or reordered, \
             longest silence {} ms, player on {}{}",
            r.name,
            r.transport,
            r.room,
            r.said,
            r.heard,
            r.missing,
            r.repeated_or_reordered,
            r.longest_silence.as_millis(),
            r.nodes.join(" -> "),
            if r.disconnected { ", DISCONNECTED" } else { "" }
        );
    }
    let sum = |f: fn(&BotReport) -> u64| reports.iter().map(f).sum::<u64>();
    println!(
        "{} clients: {} lines heard, {} missing, {} repeated or reordered, {} disconnected",
        reports.len(),
        sum(|r| r.heard),
        sum(|r| r.missing),
        sum(|r| r.repeated_or_reordered),
        reports.iter().filter(|r| r.disconnected).count()
    );
    if let Some(rid) = drain {
        println!(
            "{} players moved off {rid} while their clients stayed connected",
            bots::moved(reports).len()
        );
    }
}

/// What `--serve` takes.
#[derive(Default)]
struct ServeOptions {
    port: u16,
    tls_cert: Option<String>,
    tls_key: Option<String>,
    max_sessions: Option<usize>,
}

async fn serve(options: ServeOptions, security: &Security) -> Result<(), String> {
    // Port 0: every listener takes a free port.
    let next = |n: u16| match options.port {
        0 => Ok(0),
        port => port
            .checked_add(n)
            .ok_or_else(|| format!("--port {port} leaves no room for the next ports")),
    };
    let tls = match (&options.tls_cert, &options.tls_key) {
        (Some(cert), Some(key)) => {
            Some(TlsIdentity::from_pem_files(cert, key).map_err(|e| e.to_string())?)
        }
        (None, None) => None,
        _ => return Err("--tls-cert and --tls-key go together".into()),
    };
    let ports = ClientPorts {
        tcp: options.port,
        websocket: next(1)?,
        tls,
        max_sessions: options.max_sessions,
    };
    let mesh = ChatMesh::start(&ports, security)
        .await
        .map_err(|e| e.to_string())?;
    let (tcp, ws) = mesh.endpoints();
    let tcp_shown = tcp.strip_prefix("tcp://").unwrap_or(&tcp);
    println!("gateway: TCP clients at {tcp_shown}, WebSocket clients at {ws}/");
    let page = page::serve(next(2)?, &format!("{ws}/"))
        .await
        .map_err(|e| format!("the chat page's port: {e}"))?;
    println!("chat page: http://{page}/ (open it in a browser)");
    if let Some(max) = options.max_sessions {
        println!("  at most {max} sessions per listener");
    }
    if options.tls_cert.is_none() {
        println!(
            "  watch: cargo run -p zlink-examples --bin gateway-chat -- client ann lobby --addr {tcp_shown}"
        );
    } else {
        println!("  the page connects over wss://: the browser must trust the certificate");
    }
    println!("  type `drain players-1` or `drain players-2` here; Ctrl-C stops");
    // Read on a thread of its own: a blocked read of stdin must never keep the process
    // from stopping on Ctrl-C.
    let mut lines = console_lines();
    loop {
        tokio::select! {
            _ = zlink::stop_signal() => break,
            line = lines.recv() => match line {
                Some(line) => match line.trim().split_once(' ') {
                    Some(("drain", rid)) => match mesh.drain(rid.trim()).await {
                        Ok(done) => println!("{done}"),
                        Err(e) => println!("{e}"),
                    },
                    _ if line.trim().is_empty() => {}
                    _ => println!("commands: drain players-1 | drain players-2"),
                },
                // stdin closed (not a terminal): serve until Ctrl-C.
                None => {
                    let _ = zlink::stop_signal().await;
                    break;
                }
            },
        }
    }
    println!("stopping");
    mesh.shutdown().await;
    Ok(())
}

/// The lines typed on stdin, read on a plain thread: tokio's stdin reads on its blocking
/// pool, and a runtime waits for those at exit, so a process whose stdin stays open would
/// never end.
fn console_lines() -> tokio::sync::mpsc::Receiver<String> {
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { break };
            if tx.blocking_send(line).is_err() {
                break;
            }
        }
    });
    rx
}

async fn chat_client(
    name: &str,
    room: &str,
    addr: &str,
    transport: Transport,
) -> Result<(), String> {
    let (chat, mut rx) = client::connect(addr, transport)
        .await
        .map_err(|e| format!("connect to {addr}: {e}"))?;
    let mut early = Vec::new();
    let mut seq = 0;
    let mut call = |name: &'static str, value: serde_json::Value| {
        seq += 1;
        (seq, name, value)
    };
    for (seq, packet, value) in [
        call("login", serde_json::json!({ "name": name })),
        call("join", serde_json::json!({ "room": room })),
    ] {
        chat.request(seq, packet, &value)
            .await
            .map_err(|e| e.to_string())?;
        let answer = client::answer(&mut rx, seq, Duration::from_secs(5), &mut early).await?;
        if answer.kind == ERROR {
            return Err(format!("{packet}: {}", answer.json()));
        }
        println!("{packet}: {}", answer.json());
    }
    let mut next_seq = 100;
    let mut stdin = console_lines();
    for packet in early {
        show(&packet);
    }
    loop {
        tokio::select! {
            packet = rx.recv() => match packet {
                Some(packet) => show(&packet),
                None => {
                    println!("the gateway closed the connection");
                    return Ok(());
                }
            },
            line = stdin.recv() => match line {
                Some(line) if line.trim() == "/where" => {
                    next_seq += 1;
                    chat.request(next_seq, "where", &serde_json::json!(null))
                        .await
                        .map_err(|e| e.to_string())?;
                }
                Some(line) if !line.trim().is_empty() => {
                    chat.send("say", &serde_json::json!({ "text": line }))
                        .await
                        .map_err(|e| e.to_string())?;
                }
                Some(_) => {}
                None => {
                    let _ = chat.close().await;
                    return Ok(());
                }
            },
        }
    }
}

fn show(packet: &client::Incoming) {
    let body = packet.json();
    match (packet.kind, packet.name.as_str()) {
        (SEND, "line") => println!(
            "[{} #{}] {}: {}   (your player on {})",
            body["room"].as_str().unwrap_or("?"),
            body["seq"],
            body["from"].as_str().unwrap_or("?"),
            body["text"].as_str().unwrap_or(""),
            body["via"].as_str().unwrap_or("?")
        ),
        (SEND, "replaced") => println!("logged in elsewhere: this session ends"),
        (client::RESPONSE, _) if body["node"].is_string() => println!(
            "your player runs on {}",
            body["node"].as_str().unwrap_or("?")
        ),
        _ => match packet.closing_reason() {
            Some(reason) => println!("the gateway closes this session (reason {reason})"),
            None => println!("{} {}: {body}", packet.kind, packet.name),
        },
    }
}

/// What the command line asks for.
enum Mode {
    Demo {
        drain: Option<String>,
    },
    Serve(ServeOptions),
    Client {
        name: String,
        room: String,
        addr: String,
        transport: Transport,
    },
}

impl Mode {
    fn parse(args: &[String]) -> Result<Mode, String> {
        let mut args = args.iter().map(String::as_str);
        match args.next() {
            None => Ok(Mode::Demo { drain: None }),
            Some("--drain") => {
                let node = args.next().ok_or("--drain needs a player node")?;
                no_more(args)?;
                Ok(Mode::Demo {
                    drain: Some(node.to_string()),
                })
            }
            Some("--serve") => {
                let mut options = ServeOptions {
                    port: 7450,
                    ..ServeOptions::default()
                };
                while let Some(flag) = args.next() {
                    let mut value = || args.next().ok_or(format!("{flag} needs a value"));
                    match flag {
                        "--port" => {
                            let port = value()?;
                            options.port = port
                                .parse()
                                .map_err(|_| format!("--port takes a port number, not {port:?}"))?;
                        }
                        "--tls-cert" => options.tls_cert = Some(value()?.to_string()),
                        "--tls-key" => options.tls_key = Some(value()?.to_string()),
                        "--max-sessions" => {
                            let max = value()?;
                            options.max_sessions =
                                Some(max.parse().ok().filter(|n| *n > 0).ok_or(format!(
                                    "--max-sessions takes a number above 0, not {max:?}"
                                ))?);
                        }
                        other => return Err(format!("unexpected argument {other:?}")),
                    }
                }
                Ok(Mode::Serve(options))
            }
            Some("client") => {
                let name = args.next().ok_or("client needs NAME ROOM")?.to_string();
                let room = args.next().ok_or("client needs NAME ROOM")?.to_string();
                let (mut addr, mut transport) = ("127.0.0.1:7450".to_string(), Transport::Tcp);
                while let Some(flag) = args.next() {
                    match flag {
                        "--addr" => addr = args.next().ok_or("--addr needs HOST:PORT")?.into(),
                        "--ws" => transport = Transport::WebSocket,
                        other => return Err(format!("unexpected argument {other:?}")),
                    }
                }
                Ok(Mode::Client {
                    name,
                    room,
                    addr,
                    transport,
                })
            }
            Some(other) => Err(format!("unexpected argument {other:?}")),
        }
    }
}

fn no_more<'a>(mut args: impl Iterator<Item = &'a str>) -> Result<(), String> {
    match args.next() {
        None => Ok(()),
        Some(arg) => Err(format!("unexpected argument {arg:?}")),
    }
}
