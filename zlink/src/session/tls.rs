//! TLS for a STREAM listener (rustls): a certificate chain and its private key, in PEM.
//! Configured, it wraps both transports: TCP packets and WebSocket messages.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use crate::{Error, Result};

/// How long a client may take over its TLS handshake.
const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(10);

/// The certificate a listener presents to its clients, and its private key.
///
/// ```no_run
/// # use zlink::session::{StreamListener, TlsIdentity};
/// # #[derive(Default)] struct Lobby;
/// # #[zlink::session] impl Lobby {}
/// let identity = TlsIdentity::from_pem_files("/etc/game/cert.pem", "/etc/game/key.pem")?;
/// let gateway = StreamListener::new("gateway")
///     .bind("ws://0.0.0.0:443")
///     .tls(identity)
///     .session(Lobby::default);
/// # Ok::<(), zlink::Error>(())
/// ```
#[derive(Clone)]
pub struct TlsIdentity {
    acceptor: TlsAcceptor,
}

impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsIdentity")
    }
}

impl TlsIdentity {
    /// From PEM text: the certificate chain (leaf first) and the private key (PKCS#8,
    /// PKCS#1 or SEC1).
    pub fn from_pem(cert_chain: &[u8], private_key: &[u8]) -> Result<TlsIdentity> {
        let certs = CertificateDer::pem_slice_iter(cert_chain)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| invalid(format!("the certificate chain is not PEM: {e}")))?;
        if certs.is_empty() {
            return Err(invalid("the certificate chain holds no certificate".into()));
        }
        let key = PrivateKeyDer::from_pem_slice(private_key)
            .map_err(|e| invalid(format!("the private key is not a PEM private key: {e}")))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| invalid(format!("TLS versions: {e}")))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| {
                invalid(format!(
                    "the certificate and key do not make an identity: {e}"
                ))
            })?;
        Ok(TlsIdentity {
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })
    }

    /// From two PEM files: the certificate chain and the private key.
    pub fn from_pem_files(
        cert_chain: impl AsRef<Path>,
        private_key: impl AsRef<Path>,
    ) -> Result<TlsIdentity> {
        let read = |path: &Path| {
            std::fs::read(path).map_err(|e| invalid(format!("cannot read {}: {e}", path.display())))
        };
        TlsIdentity::from_pem(&read(cert_chain.as_ref())?, &read(private_key.as_ref())?)
    }

    /// The client's handshake, within its deadline; why not, otherwise.
    pub(crate) async fn accept(
        &self,
        stream: TcpStream,
    ) -> std::result::Result<TlsStream<TcpStream>, String> {
        match tokio::time::timeout(HANDSHAKE_DEADLINE, self.acceptor.accept(stream)).await {
            Ok(Ok(stream)) => Ok(stream),
            Ok(Err(e)) => Err(format!("TLS handshake failed: {e}")),
            Err(_) => Err("TLS handshake timed out".into()),
        }
    }
}

fn invalid(detail: String) -> Error {
    Error::InvalidArgument(format!("TLS identity: {detail}"))
}
