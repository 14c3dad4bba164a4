//! [`ZmtpTransport`]: the engine behind the [`Transport`] boundary.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use super::connection::{Delivery, Setup, ZmtpConnection};
use super::handshake::{self, HandshakeError, Side, SocketType};
use super::listener::{accept_loop, AcceptConfig, Counts};
use crate::link::transport::{
    ConnectOptions, Connection, LinkError, LinkEvents, ListenOptions, Listener, Transport,
};
use crate::link::ClientSecurity;

/// ZMTP 3.1 over TCP (`tcp://host:port`) with our own engine: the default transport.
#[derive(Debug, Default, Clone)]
pub struct ZmtpTransport;

impl ZmtpTransport {
    /// The transport.
    pub fn new() -> Self {
        ZmtpTransport
    }
}

/// `host:port` of a `tcp://host:port` endpoint.
pub(crate) fn tcp_address(endpoint: &str) -> Result<&str, LinkError> {
    endpoint
        .strip_prefix("tcp://")
        .filter(|rest| rest.rsplit_once(':').is_some())
        .ok_or_else(|| LinkError::BadEndpoint(endpoint.to_string()))
}

struct ZmtpListener {
    endpoint: String,
    cancel: CancellationToken,
    counts: Arc<Counts>,
}

impl Listener for ZmtpListener {
    fn endpoint(&self) -> String {
        self.endpoint.clone()
    }

    fn close(&self) {
        self.cancel.cancel();
    }

    fn open_connections(&self) -> usize {
        self.counts.open()
    }
}

impl Drop for ZmtpListener {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

#[async_trait]
impl Transport for ZmtpTransport {
    async fn listen(
        &self,
        endpoint: &str,
        events: Arc<dyn LinkEvents>,
        options: ListenOptions,
    ) -> Result<Box<dyn Listener>, LinkError> {
        let socket = TcpListener::bind(tcp_address(endpoint)?)
            .await
            .map_err(|e| LinkError::Io(e.to_string()))?;
        let local = socket
            .local_addr()
            .map_err(|e| LinkError::Io(e.to_string()))?;
        let cancel = CancellationToken::new();
        let counts = Arc::new(Counts::default());
        let config = AcceptConfig {
            limits: options.limits,
            security: options.security,
            socket_type: SocketType::Router,
            minor: 1,
        };
        let delivery_events = events.clone();
        tokio::spawn(accept_loop(
            socket,
            config,
            counts.clone(),
            cancel.clone(),
            Arc::new(move || Delivery::Events(delivery_events.clone())),
            Box::new(|_conn| {}),
        ));
        Ok(Box::new(ZmtpListener {
            endpoint: format!("tcp://{local}"),
            cancel,
            counts,
        }))
    }

    async fn connect(
        &self,
        endpoint: &str,
        events: Arc<dyn LinkEvents>,
        options: ConnectOptions,
    ) -> Result<Arc<dyn Connection>, LinkError> {
        let conn = dial(
            endpoint,
            &options,
            SocketType::Dealer,
            Delivery::Events(events),
        )
        .await?;
        Ok(conn)
    }
}

/// Connects and runs the handshake as `socket_type`, all within the handshake timeout.
pub(crate) async fn dial(
    endpoint: &str,
    options: &ConnectOptions,
    socket_type: SocketType,
    delivery: Delivery,
) -> Result<Arc<ZmtpConnection>, LinkError> {
    let address = tcp_address(endpoint)?;
    let attempt = async {
        let mut stream = TcpStream::connect(address)
            .await
            .map_err(|e| LinkError::Io(e.to_string()))?;
        let established =
            handshake::run(&mut stream, Side::Client(&options.security), socket_type, 1)
                .await
                .map_err(|e| match e {
                    e if e.is_refusal() => LinkError::Refused {
                        endpoint: endpoint.to_string(),
                        mechanism: match options.security {
                            ClientSecurity::Null => "NULL",
                            ClientSecurity::Curve { .. } => "CURVE",
                        },
                        reason: match e {
                            HandshakeError::PeerError(reason) => reason,
                            other => other.to_string(),
                        },
                    },
                    e => LinkError::Io(format!("handshake with {endpoint}: {e}")),
                })?;
        Ok::<_, LinkError>((stream, established))
    };
    let (stream, established) =
        match tokio::time::timeout(options.limits.handshake_timeout, attempt).await {
            Ok(done) => done?,
            Err(_) => {
                return Err(LinkError::Io(format!(
                    "connect and handshake with {endpoint} timed out"
                )))
            }
        };
    Ok(ZmtpConnection::spawn(
        stream,
        established,
        Setup {
            limits: options.limits,
            delivery,
            parent: None,
            slot: None,
            admit_by: None,
        },
    ))
}
