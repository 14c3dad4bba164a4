//! What any zlink node can serve to its operators over HTTP, opt-in: add this crate and
//! serve a [`Dashboard`] next to your node.
//!
//! | Path | Answer |
//! |---|---|
//! | `GET /alive` | `200` while the node has not stopped, else `503` (a liveness probe) |
//! | `GET /ready` | `200` when every readiness check passes, else `503`; the body is the [`zlink::Health`] as JSON (a readiness probe) |
//! | `GET /api/status` | the node's [`zlink::RuntimeStatus`] as JSON |
//! | `GET /api/objects?after=CURSOR&limit=N` | one page of the Spots and Actors the node runs ([`zlink::object::HostedObjects`]; `404` on a node without them) |
//! | `GET /metrics` | the process's metrics in the Prometheus text format, when a [`PrometheusHandle`] was given (`404` otherwise) |
//!
//! It binds `127.0.0.1` unless told otherwise: what it shows is for the node's operators.
//!
//! ```no_run
//! # async fn example(rt: &zlink::Runtime) -> std::io::Result<()> {
//! let dashboard = zlink_dashboard::Dashboard::new(rt.operator())
//!     .serve("127.0.0.1:9100".parse().unwrap())
//!     .await?;
//! println!("probes on http://{}/ready", dashboard.local_addr());
//! # Ok(())
//! # }
//! ```

use std::net::SocketAddr;

use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
pub use metrics_exporter_prometheus::PrometheusHandle;
use tokio::task::JoinHandle;
use zlink::Operator;

/// What one node serves to its operators: build it with the node's
/// [`Operator`](zlink::Runtime::operator), then [`serve`](Self::serve) it (or mount its
/// [`router`](Self::router) in your own axum application).
#[derive(Clone)]
pub struct Dashboard {
    operator: Operator,
    metrics: Option<PrometheusHandle>,
}

impl Dashboard {
    /// A dashboard of the node `operator` views.
    pub fn new(operator: Operator) -> Self {
        Dashboard {
            operator,
            metrics: None,
        }
    }

    /// Serves `/metrics` from the process's Prometheus recorder (install it before the
    /// first node starts; see the book's "Operating zlink").
    pub fn metrics(mut self, handle: PrometheusHandle) -> Self {
        self.metrics = Some(handle);
        self
    }

    /// The routes, for an axum application of your own.
    pub fn router(self) -> Router {
        Router::new()
            .route("/alive", get(alive))
            .route("/ready", get(ready))
            .route("/api/status", get(status))
            .route("/api/objects", get(objects))
            .route("/metrics", get(metrics))
            .with_state(self)
    }

    /// Binds `addr` and serves until the returned [`ServedDashboard`] is dropped or
    /// [stopped](ServedDashboard::stop).
    pub async fn serve(self, addr: SocketAddr) -> std::io::Result<ServedDashboard> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let local_addr = listener.local_addr()?;
        let rid = self.operator.rid().to_string();
        tracing::info!(rid = %rid, addr = %local_addr, "dashboard serving");
        let router = self.router();
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, router).await {
                tracing::warn!(rid = %rid, error = %e, "the dashboard stopped serving");
            }
        });
        Ok(ServedDashboard { local_addr, task })
    }
}

/// A dashboard being served.
pub struct ServedDashboard {
    local_addr: SocketAddr,
    task: JoinHandle<()>,
}

impl ServedDashboard {
    /// Where it listens (with the port it bound).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops serving.
    pub fn stop(self) {
        self.task.abort();
    }
}

impl Drop for ServedDashboard {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn alive(State(dashboard): State<Dashboard>) -> Response {
    if dashboard.operator.health().alive {
        (StatusCode::OK, "alive\n").into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "stopped\n").into_response()
    }
}

async fn ready(State(dashboard): State<Dashboard>) -> Response {
    let health = dashboard.operator.health();
    let code = if health.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, Json(health)).into_response()
}

async fn status(State(dashboard): State<Dashboard>) -> Response {
    Json(dashboard.operator.status()).into_response()
}

/// Which page of `/api/objects`.
#[derive(serde::Deserialize)]
struct Page {
    after: Option<String>,
    limit: Option<usize>,
}

async fn objects(State(dashboard): State<Dashboard>, Query(page): Query<Page>) -> Response {
    let limit = page.limit.unwrap_or(100);
    match dashboard
        .operator
        .hosted_objects(page.after.as_deref(), limit)
    {
        Ok(objects) => Json(objects).into_response(),
        Err(e) => (StatusCode::NOT_FOUND, format!("{e}\n")).into_response(),
    }
}

async fn metrics(State(dashboard): State<Dashboard>) -> Response {
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
