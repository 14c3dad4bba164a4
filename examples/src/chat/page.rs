//! The chat page a browser opens: one HTML file and the JavaScript STREAM client
//! (`clients/js/zlink-stream.js`, served as it is), talking to the gateway's WebSocket
//! listener.

use std::net::SocketAddr;

use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use axum::Router;

const PAGE: &str = include_str!("page.html");
const CLIENT: &str = include_str!("../../../clients/js/zlink-stream.js");

/// Serves the page at `http://127.0.0.1:{port}/` (0: a free port), its client talking
/// to `stream_url` (the gateway's `ws://` or `wss://` endpoint). Returns where it
/// listens; the server runs until the process ends.
pub async fn serve(port: u16, stream_url: &str) -> std::io::Result<SocketAddr> {
    let page = PAGE.replace("{{STREAM_URL}}", stream_url);
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
            tracing::warn!(error = %e, "the chat page's server stopped");
        }
    });
    Ok(address)
}
