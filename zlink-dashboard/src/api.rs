//! The read-only JSON the page and an operator's scripts read: the node's status, the
//! objects it runs, where an object is, and the mesh's nodes.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::Dashboard;

pub(crate) async fn status(State(dashboard): State<Dashboard>) -> Response {
    Json(dashboard.operator.status()).into_response()
}

/// Which page of `/api/objects`.
#[derive(serde::Deserialize)]
pub(crate) struct Page {
    after: Option<String>,
    limit: Option<usize>,
}

pub(crate) async fn objects(
    State(dashboard): State<Dashboard>,
    Query(page): Query<Page>,
) -> Response {
    let limit = page.limit.unwrap_or(100);
    match dashboard
        .operator
        .hosted_objects(page.after.as_deref(), limit)
    {
        Ok(objects) => Json(objects).into_response(),
        Err(e) => refused(&e),
    }
}

/// The object `/api/where` looks for.
#[derive(serde::Deserialize)]
pub(crate) struct Wanted {
    id: String,
}

pub(crate) async fn locate(
    State(dashboard): State<Dashboard>,
    Query(wanted): Query<Wanted>,
) -> Response {
    match dashboard.operator.locate(&wanted.id).await {
        Ok(records) => Json(records).into_response(),
        Err(e) => refused(&e),
    }
}

pub(crate) async fn nodes(State(dashboard): State<Dashboard>) -> Response {
    match dashboard.operator.nodes().await {
        Ok(nodes) => Json(nodes).into_response(),
        Err(e) => refused(&e),
    }
}

/// `e` as an HTTP answer: what the caller asked wrongly is 400, what this node does not
/// have is 404, a store that did not answer is 503.
pub(crate) fn refused(e: &zlink::Error) -> Response {
    use zlink::ErrorKind::*;
    let code = match e.kind() {
        Some(InvalidOperation | Rejected | TypeMismatch) => StatusCode::BAD_REQUEST,
        Some(NotConfigured | NotFound) => StatusCode::NOT_FOUND,
        Some(AlreadyExists) => StatusCode::CONFLICT,
        _ => StatusCode::SERVICE_UNAVAILABLE,
    };
    (code, format!("{e}\n")).into_response()
}
