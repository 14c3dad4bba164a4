//! The chat page a browser opens: one HTML file and the JavaScript STREAM client, talking
//! to the gateway's WebSocket listener.

use std::net::SocketAddr;

const PAGE: &str = include_str!("page.html");

/// Serves the page at `http://127.0.0.1:{port}/` (0: a free port), its client talking
/// to `stream_url` (the gateway's `ws://` or `wss://` endpoint). Returns where it
/// listens; the server runs until the process ends.
pub async fn serve(port: u16, stream_url: &str) -> std::io::Result<SocketAddr> {
    crate::page_server::serve(port, PAGE, stream_url).await
}
