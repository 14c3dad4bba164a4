//! What an operator sees of an example's nodes: `--metrics ADDR` serves the process's
//! Prometheus metrics and the health probes, `--dashboard ADDR` the live dashboard (with
//! its controls when `--dashboard-token` is given). Every node the process starts through
//! [`start`] gets its own, on the next port.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Mutex, OnceLock};

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use zlink::{Runtime, RuntimeBuilder};
use zlink_dashboard::{Dashboard, ServedDashboard};

use crate::cli::UsageError;
use crate::setup::Security;

/// The operator flags of the command line.
#[derive(Debug, Clone, Default)]
pub struct Operate {
    /// `--metrics ADDR`: where the first node serves `/metrics`, `/alive` and `/ready`.
    pub metrics: Option<SocketAddr>,
    /// `--dashboard ADDR`: where the first node serves its dashboard.
    pub dashboard: Option<SocketAddr>,
    /// `--dashboard-token TOKEN` (or `ZLINK_DASHBOARD_TOKEN`): turns the dashboard's
    /// controls on, for requests that carry it.
    pub token: Option<String>,
}

impl Operate {
    /// An address flag's value: `HOST:PORT`, or a bare port on 127.0.0.1.
    pub fn address(flag: &str, value: &str) -> Result<SocketAddr, UsageError> {
        let text = if value.contains(':') {
            value.to_string()
        } else {
            format!("127.0.0.1:{value}")
        };
        text.parse()
            .map_err(|_| UsageError(format!("{flag} needs HOST:PORT or a port, not {value:?}")))
    }

    fn wanted(&self) -> bool {
        self.metrics.is_some() || self.dashboard.is_some()
    }
}

/// What this process serves its operators, set once by [`install`].
struct Served {
    operate: Operate,
    recorder: Option<PrometheusHandle>,
    /// Nodes started so far: the next one serves on the ports after theirs.
    nodes: AtomicU16,
    /// Kept for the life of the process.
    running: Mutex<Vec<ServedDashboard>>,
}

static SERVED: OnceLock<Served> = OnceLock::new();

/// Takes the operator flags for this process: installs the Prometheus recorder when
/// either address is given (before any node starts, so every node's instruments are
/// recorded).
pub fn install(operate: Operate) -> Result<(), UsageError> {
    if operate.token.is_some() && operate.dashboard.is_none() {
        return Err(UsageError(
            "--dashboard-token needs --dashboard: the token unlocks its controls".to_string(),
        ));
    }
    let recorder = if operate.wanted() {
        let depth = Matcher::Full(zlink::telemetry::names::MAILBOX_DEPTH.to_string());
        let recorder = PrometheusBuilder::new()
            .set_buckets(zlink::telemetry::DURATION_BUCKETS_SECONDS)
            .and_then(|b| b.set_buckets_for_metric(depth, zlink::telemetry::DEPTH_BUCKETS))
            .and_then(PrometheusBuilder::install_recorder)
            .map_err(|e| UsageError(format!("the metrics recorder: {e}")))?;
        Some(recorder)
    } else {
        None
    };
    let _ = SERVED.set(Served {
        operate,
        recorder,
        nodes: AtomicU16::new(0),
        running: Mutex::new(Vec::new()),
    });
    Ok(())
}

/// Starts the node `builder` describes, secured by `security` (carrying the
/// OpenTelemetry context with `--otlp`), and serves what the operator flags ask for it.
pub async fn start(security: &Security, builder: RuntimeBuilder) -> zlink::Result<Runtime> {
    let builder = match crate::otlp::exporting() {
        true => builder.trace_propagation(crate::otlp::OtelPropagation),
        false => builder,
    };
    let rt = security.apply(builder).build()?.start().await?;
    if let Some(served) = SERVED.get() {
        served.serve(&rt).await;
    }
    Ok(rt)
}

impl Served {
    async fn serve(&self, rt: &Runtime) {
        if !self.operate.wanted() {
            return;
        }
        let n = self.nodes.fetch_add(1, Ordering::Relaxed);
        if let Some(addr) = self.operate.metrics {
            let dashboard = self.dashboard(rt, false);
            self.run(rt.rid(), "metrics", dashboard, next(addr, n), "metrics")
                .await;
        }
        if let Some(addr) = self.operate.dashboard {
            let controls = self.operate.token.is_some();
            let dashboard = self.dashboard(rt, controls);
            self.run(rt.rid(), "dashboard", dashboard, next(addr, n), "")
                .await;
        }
    }

    fn dashboard(&self, rt: &Runtime, controls: bool) -> Dashboard {
        let mut dashboard = Dashboard::new(rt.operator());
        if let Some(recorder) = &self.recorder {
            dashboard = dashboard.metrics(recorder.clone());
        }
        match (&self.operate.token, controls) {
            (Some(token), true) => match dashboard.clone().controls(rt.controls(), token) {
                Ok(with_controls) => with_controls,
                Err(e) => {
                    eprintln!("dashboard controls stay off: {e}");
                    dashboard
                }
            },
            _ => dashboard,
        }
    }

    async fn run(&self, rid: &str, what: &str, dashboard: Dashboard, addr: SocketAddr, path: &str) {
        match dashboard.serve(addr).await {
            Ok(served) => {
                println!("{what} of {rid}: http://{}/{path}", served.local_addr());
                if let Ok(mut running) = self.running.lock() {
                    running.push(served);
                }
            }
            Err(e) => eprintln!("{what} of {rid} on {addr}: {e}"),
        }
    }
}

/// The process's Prometheus recorder, when `--metrics` or `--dashboard` installed one: a
/// dashboard an example serves itself shows calls per second from it.
pub fn recorder() -> Option<PrometheusHandle> {
    SERVED.get().and_then(|served| served.recorder.clone())
}

/// `addr` for the process's node number `n`: the same port for the first, the next ports
/// for the others (port 0 stays 0: any free port).
fn next(addr: SocketAddr, n: u16) -> SocketAddr {
    let mut addr = addr;
    if addr.port() != 0 {
        addr.set_port(addr.port().saturating_add(n));
    }
    addr
}
