//! What probes and scrapers read: `/alive`, `/ready` and `/metrics`.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::Dashboard;

pub(crate) async fn alive(State(dashboard): State<Dashboard>) -> Response {
    if dashboard.operator.health().alive {
        (StatusCode::OK, "alive\n").into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "stopped\n").into_response()
    }
}

pub(crate) async fn ready(State(dashboard): State<Dashboard>) -> Response {
    let health = dashboard.operator.health();
    let code = if health.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, Json(health)).into_response()
}

pub(crate) async fn metrics(State(dashboard): State<Dashboard>) -> Response {
    match &dashboard.metrics {
        Some(handle) => (
            [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
            handle.render(),
        )
            .into_response(),
        None => (
            StatusCode::NOT_FOUND,
            "no Prometheus recorder was given to this dashboard\n",
        )
            .into_response(),
    }
}
