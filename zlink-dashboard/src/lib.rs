//! What any zlink node can serve to its operators over HTTP, opt-in: add this crate and
//! serve a [`Dashboard`] next to your node.
//!
//! | Path | Answer |
//! |---|---|
//! | `GET /` | the dashboard page: nodes, channels, objects and search, calls, sessions, live events, errors, controls |
//! | `GET /alive` | `200` while the node has not stopped, else `503` (a liveness probe) |
//! | `GET /ready` | `200` when every readiness check passes, else `503`; the body is the [`zlink::Health`] as JSON (a readiness probe) |
//! | `GET /metrics` | the process's metrics in the Prometheus text format, when a [`PrometheusHandle`] was given (`404` otherwise) |
//! | `GET /api/status` | the node's [`zlink::RuntimeStatus`] as JSON |
//! | `GET /api/objects?after=CURSOR&limit=N` | one page of the Spots and Actors the node runs ([`zlink::object::HostedObjects`]) |
//! | `GET /api/where?id=ID` | where the Spot and the Actor `ID` are, from the Location Store |
//! | `GET /api/nodes` | the mesh's nodes, from the Location Store |
//! | `GET /api/stream` | Server-Sent Events, one `update` a second at most while someone reads it: status, health, the status stream's events (the SSE `id` is the last event's sequence; `Last-Event-ID` resumes), calls per surface, this process's CPU and memory |
//! | `POST /api/control/{drain,undrain,relocate,reclaim,disconnect}` | the controls, only when [enabled](Dashboard::controls), each with `Authorization: Bearer TOKEN` (`403` when off, `401` without the token) |
//! | `GET /api/panels` | the application's [panels](Panel), shown under the dashboard's sections |
//! | `/app/{name}/…` | a panel's own routes (its page at `/app/{name}/`); methods other than `GET` and `HEAD` need the controls' token like the controls |
//!
//! It binds `127.0.0.1` unless told otherwise, and is read-only unless given the node's
//! [`Controls`](zlink::Controls) and a token. Nothing is gathered for the page while no
//! page is open. The listener refuses connections over
//! [`MAX_CONNECTIONS`] and closes one whose request head takes longer than
//! [`HEADER_TIMEOUT`] or exceeds [`MAX_HEAD_BYTES`].
//!
//! ```no_run
//! # async fn example(rt: &zlink::Runtime) -> std::io::Result<()> {
//! let dashboard = zlink_dashboard::Dashboard::new(rt.operator())
//!     .serve("127.0.0.1:9100".parse().unwrap())
//!     .await?;
//! println!("dashboard on http://{}/", dashboard.local_addr());
//! # Ok(())
//! # }
//! ```

mod api;
mod controls;
mod figures;
mod listener;
mod panel;
mod probes;
mod process;
mod stream;

use std::net::SocketAddr;

use axum::extract::DefaultBodyLimit;
use axum::response::Html;
use axum::routing::{get, post};
use axum::Router;
pub use listener::{HEADER_TIMEOUT, MAX_CONNECTIONS, MAX_HEAD_BYTES};
pub use metrics_exporter_prometheus::PrometheusHandle;
pub use panel::{Panel, MAX_PANEL_NAME};
pub use stream::UPDATE_EVERY;
use tokio::task::JoinHandle;
use zlink::Operator;

/// The largest body a control takes.
const MAX_CONTROL_BODY: usize = 16 * 1024;

/// What one node serves to its operators: build it with the node's
/// [`Operator`](zlink::Runtime::operator), then [`serve`](Self::serve) it (or mount its
/// [`router`](Self::router) in your own axum application).
#[derive(Clone)]
pub struct Dashboard {
    operator: Operator,
    metrics: Option<PrometheusHandle>,
    controls: Option<controls::Unlocked>,
    panels: Vec<Panel>,
}

impl Dashboard {
    /// A read-only dashboard of the node `operator` views.
    pub fn new(operator: Operator) -> Self {
        Dashboard {
            operator,
            metrics: None,
            controls: None,
            panels: Vec::new(),
        }
    }

    /// Adds an application's `panel` to the page (see [`Panel`]). A second panel of the
    /// same name replaces the first.
    pub fn panel(mut self, panel: Panel) -> Self {
        self.panels.retain(|kept| kept.name != panel.name);
        self.panels.push(panel);
        self
    }

    /// Serves `/metrics` from the process's Prometheus recorder (install it before the
    /// first node starts; see the book's "Operating zlink"), and shows calls per second
    /// and p99 per surface on the page.
    pub fn metrics(mut self, handle: PrometheusHandle) -> Self {
        self.metrics = Some(handle);
        self
    }

    /// Enables the controls (drain, undrain, relocate, reclaim, disconnect) for requests
    /// that carry `Authorization: Bearer <token>`. `InvalidOperation` for a token shorter
    /// than 16 characters: it is all that stands between the network and the node.
    pub fn controls(mut self, controls: zlink::Controls, token: &str) -> zlink::Result<Self> {
        if token.chars().count() < 16 {
            return Err(zlink::Error::new(
                zlink::ErrorKind::InvalidOperation,
                "the dashboard's control token must be at least 16 characters",
            ));
        }
        self.controls = Some(controls::Unlocked {
            controls,
            token: token.to_string(),
        });
        Ok(self)
    }

    /// The routes, for an axum application of your own.
    pub fn router(self) -> Router {
        let control = Router::new()
            .route("/drain", post(controls::drain))
            .route("/undrain", post(controls::undrain))
            .route("/relocate", post(controls::relocate))
            .route("/reclaim", post(controls::reclaim))
            .route("/disconnect", post(controls::disconnect))
            .layer(DefaultBodyLimit::max(MAX_CONTROL_BODY));
        let mut panels = Router::new();
        for panel in &self.panels {
            let guarded = panel
                .router
                .clone()
                .layer(axum::middleware::from_fn_with_state(
                    self.clone(),
                    panel::guard,
                ))
                .layer(DefaultBodyLimit::max(MAX_CONTROL_BODY));
            panels = panels.nest(&format!("/app/{}/", panel.name), guarded);
        }
        Router::new()
            .route("/", get(page))
            .route("/alive", get(probes::alive))
            .route("/ready", get(probes::ready))
            .route("/metrics", get(probes::metrics))
            .route("/api/status", get(api::status))
            .route("/api/objects", get(api::objects))
            .route("/api/where", get(api::locate))
            .route("/api/nodes", get(api::nodes))
            .route("/api/stream", get(stream::stream))
            .route("/api/panels", get(panel::list))
            .nest("/api/control", control)
            .with_state(self)
            .merge(panels)
    }

    /// Binds `addr` and serves until the returned [`ServedDashboard`] is dropped or
    /// [stopped](ServedDashboard::stop).
    pub async fn serve(self, addr: SocketAddr) -> std::io::Result<ServedDashboard> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let local_addr = listener.local_addr()?;
        let rid = self.operator.rid().to_string();
        tracing::info!(rid = %rid, addr = %local_addr, controls = self.controls.is_some(), "dashboard serving");
        let task = tokio::spawn(listener::serve(listener, self.router(), rid));
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

async fn page() -> Html<&'static str> {
    Html(include_str!("page.html"))
}
