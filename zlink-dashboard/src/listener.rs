//! The dashboard's HTTP listener, bounded against hostile or careless clients: a cap on
//! open connections (the one over it is answered `503` and closed), a deadline for each
//! request head, and a cap on its size.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// Connections served at once; the one over it is refused.
pub const MAX_CONNECTIONS: usize = 64;
/// How long a client may take to send a request head, from its connection or its last
/// request on.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest request head taken (the request line and headers).
pub const MAX_HEAD_BYTES: usize = 16 * 1024;

const OVER_CAPACITY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: 33\r\nconnection: close\r\n\r\nthe dashboard has too many users\n";

/// Accepts and serves connections on `listener` until the task is aborted.
pub(crate) async fn serve(listener: TcpListener, router: Router, rid: String) {
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let (mut stream, remote) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of descriptors, most likely: wait instead of spinning.
                tracing::warn!(rid = %rid, error = %e, "the dashboard could not accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            tracing::warn!(rid = %rid, %remote, max = MAX_CONNECTIONS, "dashboard connection refused: too many open");
            tokio::spawn(async move {
                let _ = tokio::time::timeout(HEADER_TIMEOUT, stream.write_all(OVER_CAPACITY)).await;
            });
            continue;
        };
        let service = TowerToHyperService::new(router.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let served = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .max_buf_size(MAX_HEAD_BYTES)
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(e) = served {
                tracing::debug!(%remote, error = %e, "dashboard connection ended with an error");
            }
        });
    }
}
