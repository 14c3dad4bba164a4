//! The controls: drain and undrain the node, move one object, reclaim a dead node's
//! objects, disconnect a session. Each is a `POST` that needs `Authorization: Bearer
//! TOKEN` with the token the dashboard was given; without controls enabled every one is
//! `403`, without the right token `401`, and nothing is done.

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;

use crate::api::refused;
use crate::Dashboard;

/// The node's controls and the token that unlocks them.
#[derive(Clone)]
pub(crate) struct Unlocked {
    pub(crate) controls: zlink::Controls,
    pub(crate) token: String,
}

/// Why a control was not run.
pub(crate) enum Refusal {
    /// The dashboard was not given the controls.
    Off,
    /// The request has no bearer token, or another one.
    NoToken,
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::Off => (
                StatusCode::FORBIDDEN,
                "controls are off on this dashboard (read-only)\n",
            )
                .into_response(),
            Refusal::NoToken => (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "a control needs the dashboard's bearer token\n",
            )
                .into_response(),
        }
    }
}

/// The controls, if the request carries the token.
pub(crate) fn unlock<'a>(
    dashboard: &'a Dashboard,
    headers: &HeaderMap,
) -> Result<&'a zlink::Controls, Refusal> {
    let Some(unlocked) = &dashboard.controls else {
        return Err(Refusal::Off);
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match given {
        Some(given) if same(given.as_bytes(), unlocked.token.as_bytes()) => Ok(&unlocked.controls),
        _ => {
            tracing::warn!(rid = %dashboard.operator.rid(), "a dashboard control was refused: no valid bearer token");
            Err(Refusal::NoToken)
        }
    }
}

/// Whether `a` and `b` are equal, in time that depends only on their lengths.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

pub(crate) async fn drain(State(dashboard): State<Dashboard>, headers: HeaderMap) -> Response {
    let controls = match unlock(&dashboard, &headers) {
        Ok(controls) => controls,
        Err(refusal) => return refusal.into_response(),
    };
    match controls.drain().await {
        Ok(report) => Json(drained(&report)).into_response(),
        Err(e) => refused(&e),
    }
}

/// What a drain did, as JSON: each moved object with the node it runs on now, the ones
/// that stayed and why, the moves that failed with their errors.
fn drained(report: &zlink::object::RelocationReport) -> serde_json::Value {
    let moved: Vec<_> = report
        .moved
        .iter()
        .map(|a| serde_json::json!({ "kind": "actor", "id": a.id.as_str(), "rid": a.rid }))
        .chain(
            report
                .moved_spots
                .iter()
                .map(|s| serde_json::json!({ "kind": "spot", "id": s.id.as_str(), "rid": s.rid })),
        )
        .collect();
    let blocked: Vec<_> = report
        .blocked
        .iter()
        .map(|b| serde_json::json!({ "id": b.id, "is_spot": b.is_spot, "reason": format!("{:?}", b.reason) }))
        .collect();
    let failed: Vec<_> = report
        .failed
        .iter()
        .map(|(id, e)| serde_json::json!({ "id": id, "error": e.to_string() }))
        .collect();
    serde_json::json!({ "complete": report.is_complete(), "moved": moved, "blocked": blocked, "failed": failed })
}

pub(crate) async fn undrain(State(dashboard): State<Dashboard>, headers: HeaderMap) -> Response {
    let controls = match unlock(&dashboard, &headers) {
        Ok(controls) => controls,
        Err(refusal) => return refusal.into_response(),
    };
    match controls.undrain().await {
        Ok(()) => Json(serde_json::json!({ "draining": false })).into_response(),
        Err(e) => refused(&e),
    }
}

/// What `/api/control/relocate` moves, and where.
#[derive(Deserialize)]
pub(crate) struct Move {
    /// `spot` or `actor`.
    kind: String,
    id: String,
    /// The target RID; placement picks without one.
    to: Option<String>,
}

pub(crate) async fn relocate(
    State(dashboard): State<Dashboard>,
    headers: HeaderMap,
    Json(wanted): Json<Move>,
) -> Response {
    let controls = match unlock(&dashboard, &headers) {
        Ok(controls) => controls,
        Err(refusal) => return refusal.into_response(),
    };
    let to = wanted.to.as_deref().filter(|to| !to.is_empty());
    let moved = match wanted.kind.as_str() {
        "spot" => controls.relocate_spot(&wanted.id, to).await,
        "actor" => controls.relocate_actor(&wanted.id, to).await,
        other => {
            return (
                StatusCode::BAD_REQUEST,
                format!("kind is spot or actor, not {other:?}\n"),
            )
                .into_response()
        }
    };
    match moved {
        Ok(rid) => Json(serde_json::json!({ "id": wanted.id, "rid": rid })).into_response(),
        Err(e) => refused(&e),
    }
}

/// Whose objects `/api/control/reclaim` releases.
#[derive(Deserialize)]
pub(crate) struct Reclaim {
    node: String,
}

pub(crate) async fn reclaim(
    State(dashboard): State<Dashboard>,
    headers: HeaderMap,
    Json(wanted): Json<Reclaim>,
) -> Response {
    let controls = match unlock(&dashboard, &headers) {
        Ok(controls) => controls,
        Err(refusal) => return refusal.into_response(),
    };
    match controls.reclaim_node(&wanted.node).await {
        Ok(report) => Json(report).into_response(),
        Err(e) => refused(&e),
    }
}

/// Which session `/api/control/disconnect` closes.
#[derive(Deserialize)]
pub(crate) struct Disconnect {
    listener: String,
    session: u64,
}

pub(crate) async fn disconnect(
    State(dashboard): State<Dashboard>,
    headers: HeaderMap,
    Json(wanted): Json<Disconnect>,
) -> Response {
    let controls = match unlock(&dashboard, &headers) {
        Ok(controls) => controls,
        Err(refusal) => return refusal.into_response(),
    };
    if controls.disconnect_session(&wanted.listener, wanted.session) {
        Json(serde_json::json!({ "disconnected": wanted.session })).into_response()
    } else {
        (
            StatusCode::NOT_FOUND,
            format!(
                "no open session {} on listener {:?}\n",
                wanted.session, wanted.listener
            ),
        )
            .into_response()
    }
}
