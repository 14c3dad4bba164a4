//! How a STREAM listener is declared: a name, a bind endpoint, limits and exactly one
//! session type. `build()` checks every declaration and reports every problem at once.

use std::sync::Arc;

use super::limits::StreamLimits;
use super::session_type::{MakeSession, Session, SessionFactory};
use super::tls::TlsIdentity;
use crate::ConfigViolation;

/// How a listener's clients connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamTransport {
    /// Packets on a TCP byte stream (`tcp://`).
    Tcp,
    /// One packet per binary WebSocket message (`ws://`).
    WebSocket,
}

/// A STREAM listener for outside clients: register it with
/// [`RuntimeBuilder::stream_listener`](crate::RuntimeBuilder::stream_listener).
///
/// ```
/// # use zlink::session::StreamListener;
/// # #[derive(Default)] struct Lobby;
/// # #[zlink::session] impl Lobby {}
/// let gateway = StreamListener::new("gateway")
///     .bind("tcp://0.0.0.0:9001")
///     .advertise_host("gw-1.example.net")
///     .session(Lobby::default);
/// ```
pub struct StreamListener {
    pub(crate) name: String,
    pub(crate) bind: Option<String>,
    pub(crate) advertise_host: Option<String>,
    pub(crate) tls: Option<TlsIdentity>,
    pub(crate) limits: StreamLimits,
    pub(crate) factories: Vec<Arc<dyn SessionFactory>>,
}

impl std::fmt::Debug for StreamListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamListener")
            .field("name", &self.name)
            .field("bind", &self.bind)
            .field("tls", &self.tls.is_some())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl StreamListener {
    /// A listener named `name` (unique on the node; it names the listener in logs and
    /// status).
    pub fn new(name: impl Into<String>) -> Self {
        StreamListener {
            name: name.into(),
            bind: None,
            advertise_host: None,
            tls: None,
            limits: StreamLimits::default(),
            factories: Vec::new(),
        }
    }

    /// Where it listens (required): `tcp://host:port` for packets on TCP,
    /// `ws://host:port` for one packet per binary WebSocket message. Port 0 picks one.
    pub fn bind(mut self, endpoint: impl Into<String>) -> Self {
        self.bind = Some(endpoint.into());
        self
    }

    /// The host clients are told to connect to, when it differs from the bound one.
    pub fn advertise_host(mut self, host: impl Into<String>) -> Self {
        self.advertise_host = Some(host.into());
        self
    }

    /// Serves TLS on the bound transport: TCP packets inside TLS, or WebSocket over TLS
    /// (`wss://` to a browser). The endpoint then reads `tls://` or `wss://`.
    pub fn tls(mut self, identity: TlsIdentity) -> Self {
        self.tls = Some(identity);
        self
    }

    /// Replaces the limits.
    pub fn limits(mut self, limits: StreamLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the largest inbound message (header and payload; default 64 KiB).
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.limits.max_message_size = bytes;
        self
    }

    /// Sets how many sessions may be open at once.
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.limits.max_sessions = sessions;
        self
    }

    /// The session type (exactly one per listener): `make` builds one per connection.
    pub fn session<S: Session, F: Fn() -> S + Send + Sync + 'static>(mut self, make: F) -> Self {
        self.factories.push(Arc::new(MakeSession {
            make,
            _session: std::marker::PhantomData,
        }));
        self
    }

    /// The transport the bind endpoint names.
    pub(crate) fn transport(&self) -> Option<StreamTransport> {
        let bind = self.bind.as_deref()?;
        if bind.starts_with("tcp://") {
            Some(StreamTransport::Tcp)
        } else if bind.starts_with("ws://") {
            Some(StreamTransport::WebSocket)
        } else {
            None
        }
    }

    /// The `host:port` to bind.
    pub(crate) fn address(&self) -> Option<&str> {
        let bind = self.bind.as_deref()?;
        bind.strip_prefix("tcp://")
            .or_else(|| bind.strip_prefix("ws://"))
    }
}

/// Checks the listeners of one node, adding a violation per problem.
pub(crate) fn validate(listeners: &[StreamListener], violations: &mut Vec<ConfigViolation>) {
    let mut names = std::collections::BTreeSet::new();
    for listener in listeners {
        let setting = format!("stream listener {:?}", listener.name);
        let mut problem = |problem: String| {
            violations.push(ConfigViolation {
                setting: setting.clone(),
                problem,
            })
        };
        if listener.name.is_empty() {
            problem("the name is empty".into());
        } else if !names.insert(listener.name.clone()) {
            problem("the name is used by another stream listener".into());
        }
        match (&listener.bind, listener.transport()) {
            (None, _) => problem("no bind endpoint: call .bind(\"tcp://host:port\")".into()),
            (Some(bind), None) => problem(format!(
                "bind endpoint {bind:?} is neither tcp://host:port nor ws://host:port"
            )),
            (Some(_), Some(_)) => {
                if listener.address().is_some_and(|a| !a.contains(':')) {
                    problem("the bind endpoint has no port".into());
                }
            }
        }
        match listener.factories.len() {
            1 => check_packets(listener.factories[0].as_ref(), &mut problem),
            0 => problem("no session type: call .session(MySession::default)".into()),
            n => problem(format!("{n} session types; a listener runs exactly one")),
        }
        let limits = &listener.limits;
        if limits.max_sessions == 0 {
            problem("max_sessions is 0: it would refuse every client".into());
        }
        if limits.outbound_bytes == 0 {
            problem("outbound_bytes is 0".into());
        }
        if limits.send_timeout.is_zero() {
            problem("send_timeout is 0".into());
        }
        if limits.lane_depth == 0 {
            problem("lane_depth is 0".into());
        }
        if limits.relocation_seal_timeout.is_zero() {
            problem(
                "relocation_seal_timeout is 0: every bound Actor's move would end its session"
                    .into(),
            );
        }
        if !limits.heartbeat_timeout.is_zero()
            && !limits.heartbeat_interval.is_zero()
            && limits.heartbeat_timeout <= limits.heartbeat_interval
        {
            problem(format!(
                "heartbeat_timeout ({:?}) must exceed heartbeat_interval ({:?})",
                limits.heartbeat_timeout, limits.heartbeat_interval
            ));
        }
    }
}

fn check_packets(factory: &dyn SessionFactory, problem: &mut impl FnMut(String)) {
    let mut seen = std::collections::BTreeSet::new();
    for (name, _) in factory.packets() {
        if name.starts_with(super::RESERVED_PREFIX) {
            problem(format!(
                "session {} handles packet {name:?}, which starts with the reserved {:?}",
                factory.type_name(),
                super::RESERVED_PREFIX
            ));
        }
        if !seen.insert(name) {
            problem(format!(
                "session {} has two handlers for packet {name:?}",
                factory.type_name()
            ));
        }
    }
}
