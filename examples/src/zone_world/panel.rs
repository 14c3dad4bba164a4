//! The ops view's Zone World panel, on the ops node's dashboard: players per zone, a
//! maintenance toggle and a drain button per zone node, an announce form and a diagnose
//! button. Reads are open; the rest are controls (the dashboard's token).

use std::time::{Duration, SystemTime};

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use zlink::{Handle, Operator};
use zlink_dashboard::Panel;

use super::broadcast::{Board, BROADCAST};
use super::desk::{CheckNode, DrainNode, UndrainNode, DRAIN_TIMEOUT};
use super::messages::{Look, View};
use super::ops::Ops;
use super::snapshots::world_tick;
use super::world::Zone;
use super::zone::ZoneSpot;

const PAGE: &str = include_str!("panel.html");
/// How long the panel waits for one zone or node to answer.
const ASK: Duration = Duration::from_secs(1);
/// A zone whose view is older than this many ticks is reported as not ticking.
const STALE_TICKS: u64 = 10;

/// What the panel works with: the ops node's handle, operator and board.
#[derive(Clone)]
struct Desk {
    handle: Handle,
    operator: Operator,
    ops: Ops,
}

/// The panel of the ops node whose handle, operator and board are given.
pub fn panel(handle: &Handle, operator: Operator, ops: Ops) -> zlink::Result<Panel> {
    let desk = Desk {
        handle: handle.clone(),
        operator,
        ops,
    };
    let router = Router::new()
        .route("/", get(|| async { Html(PAGE) }))
        .route("/state", get(state))
        .route("/diagnose", get(diagnose))
        .route("/maintenance", post(maintenance))
        .route("/announce", post(announce))
        .route("/drain", post(drain))
        .route("/undrain", post(undrain))
        .with_state(desk);
    Panel::new("zone-world", "Zone World", router)
}

/// One zone as the panel shows it.
#[derive(Serialize)]
struct ZoneRow {
    zone: &'static str,
    node: Option<String>,
    players: usize,
    bots: usize,
    tick_lag: Option<u64>,
    error: Option<String>,
}

/// One zone node as the panel shows it.
#[derive(Serialize)]
struct NodeRow {
    rid: String,
    maintenance: bool,
    draining: bool,
    lease_live: bool,
}

#[derive(Serialize)]
struct WorldState {
    zones: Vec<ZoneRow>,
    nodes: Vec<NodeRow>,
    board: Board,
}

async fn look(desk: &Desk, zone: Zone) -> ZoneRow {
    let mut row = ZoneRow {
        zone: zone.name(),
        node: None,
        players: 0,
        bots: 0,
        tick_lag: None,
        error: None,
    };
    if let Ok(Some(found)) = desk.handle.spots().find(zone.name()).await {
        row.node = Some(found.rid);
    }
    let looked = desk.handle.spots().request(zone.name(), &Look).timeout(ASK);
    match looked.await {
        Ok(View { here, tick, .. }) => {
            row.bots = here.iter().filter(|dot| dot.bot).count();
            row.players = here.len() - row.bots;
            row.tick_lag = Some(world_tick(SystemTime::now()).saturating_sub(tick));
        }
        Err(e) => row.error = Some(e.to_string()),
    }
    row
}

async fn world_state(desk: &Desk) -> zlink::Result<WorldState> {
    let mut zones = Vec::new();
    for zone in Zone::ALL {
        zones.push(look(desk, zone).await);
    }
    let board = desk.ops.board().await?;
    let nodes = desk
        .operator
        .nodes()
        .await?
        .into_iter()
        .filter(|node| node.spot_types.iter().any(|t| t == ZoneSpot::STABLE_TYPE))
        .map(|node| NodeRow {
            maintenance: board.maintenance.contains(&node.rid),
            rid: node.rid,
            draining: node.draining,
            lease_live: node.lease_live,
        })
        .collect();
    Ok(WorldState {
        zones,
        nodes,
        board,
    })
}

async fn state(State(desk): State<Desk>) -> Response {
    answer(world_state(&desk).await)
}

/// One finding of the diagnosis.
#[derive(Serialize)]
struct Finding {
    check: String,
    ok: bool,
    detail: String,
}

async fn diagnose(State(desk): State<Desk>) -> Response {
    let world = match world_state(&desk).await {
        Ok(world) => world,
        Err(e) => return failed(&e),
    };
    let mut findings = Vec::new();
    for zone in &world.zones {
        let (ok, detail) = match (&zone.error, zone.tick_lag) {
            (Some(e), _) => (false, format!("does not answer: {e}")),
            (None, Some(lag)) if lag > STALE_TICKS => (false, format!("{lag} ticks behind")),
            _ => (
                true,
                format!(
                    "on {}, {} players, {} bots",
                    zone.node.as_deref().unwrap_or("?"),
                    zone.players,
                    zone.bots
                ),
            ),
        };
        let check = format!("zone {} answers and ticks", zone.zone);
        findings.push(Finding { check, ok, detail });
    }
    for node in &world.nodes {
        findings.push(check_node(&desk, node, &world.board).await);
    }
    let dropped = desk.handle.fanout().dropped(BROADCAST).unwrap_or(0);
    findings.push(Finding {
        check: "the board reaches every subscriber".into(),
        ok: dropped == 0,
        detail: format!("{dropped} copies dropped at a full subscriber queue"),
    });
    Json(findings).into_response()
}

async fn check_node(desk: &Desk, node: &NodeRow, board: &Board) -> Finding {
    let check = format!("zone node {} is alive and follows the board", node.rid);
    if !node.lease_live {
        let detail = "its owner lease expired: it is gone (reclaim its objects)".into();
        return Finding {
            check,
            ok: false,
            detail,
        };
    }
    let asked = desk
        .handle
        .nodes()
        .request(&node.rid, &CheckNode)
        .timeout(ASK);
    let (ok, detail) = match asked.await {
        Err(e) => (false, format!("does not answer: {e}")),
        Ok(seen) => {
            let news = board.news.last().map(|news| news.id);
            let follows = seen.maintenance == node.maintenance && seen.latest_news == news;
            let detail = format!(
                "maintenance {} (set: {}), latest announcement {:?} (published: {news:?}){}",
                on_off(seen.maintenance),
                on_off(node.maintenance),
                seen.latest_news,
                if seen.draining { ", drained" } else { "" }
            );
            (follows, detail)
        }
    };
    Finding { check, ok, detail }
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

#[derive(Deserialize)]
struct Setting {
    node: String,
    on: bool,
}

async fn maintenance(State(desk): State<Desk>, Json(setting): Json<Setting>) -> Response {
    answer(desk.ops.set_maintenance(&setting.node, setting.on).await)
}

#[derive(Deserialize)]
struct Announcing {
    text: String,
}

async fn announce(State(desk): State<Desk>, Json(announcing): Json<Announcing>) -> Response {
    answer(desk.ops.announce(&announcing.text).await)
}

#[derive(Deserialize)]
struct NodeNamed {
    node: String,
}

async fn drain(State(desk): State<Desk>, Json(named): Json<NodeNamed>) -> Response {
    tracing::info!(node = %named.node, "drain asked from the ops panel");
    let asked = desk.handle.nodes().request(&named.node, &DrainNode);
    answer(asked.timeout(DRAIN_TIMEOUT).await)
}

async fn undrain(State(desk): State<Desk>, Json(named): Json<NodeNamed>) -> Response {
    answer(desk.handle.nodes().request(&named.node, &UndrainNode).await)
}

fn answer<T: Serialize>(outcome: zlink::Result<T>) -> Response {
    match outcome {
        Ok(value) => Json(value).into_response(),
        Err(e) => failed(&e),
    }
}

fn failed(e: &zlink::Error) -> Response {
    use zlink::ErrorKind::{InvalidOperation, NotFound, Rejected};
    let code = match e.kind() {
        None | Some(InvalidOperation | Rejected) => StatusCode::BAD_REQUEST,
        Some(NotFound) => StatusCode::NOT_FOUND,
        _ => StatusCode::SERVICE_UNAVAILABLE,
    };
    let plain = [(header::CONTENT_TYPE, "text/plain; charset=utf-8")];
    (code, plain, format!("{e}\n")).into_response()
}
