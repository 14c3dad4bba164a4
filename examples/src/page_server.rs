//! Serving a browser page of an example: one HTML file and the JavaScript STREAM client
//! (`clients/js/zlink-stream.js`, served as it is), the page talking to a gateway's
//! WebSocket listener.

use std::net::SocketAddr;

use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use axum::Router;

const CLIENT: &str = include_str!("../../clients/js/zlink-stream.js");

/// Serves `page` at `http://127.0.0.1:{port}/` (0: a free port) with `{{STREAM_URL}}` in
/// it replaced by `stream_url` (the gateway's `ws://` or `wss://` endpoint), and the
/// client at `/zlink-stream.js`. Returns where it listens; the server runs until the
/// process ends.
pub async fn serve(port: u16, page: &str, stream_url: &str) -> std::io::Result<SocketAddr> {
    let page = page.replace("{{STREAM_URL}}", stream_url);
    let app = Router::new()
        .route("/", get(move || async move { Html(page) }))
        .route(
            "/zlink-stream.js",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
                    CLIENT,
                )
                    .into_response()
            }),
        );
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::warn!(error = %e, "a page's server stopped");
        }
    });
    Ok(address)
}
