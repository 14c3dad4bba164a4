//! The dashboard's controls over real HTTP: off unless enabled, refused without the
//! token, and a bad request changes nothing.

use zlink_dashboard::Dashboard;
use zlink_testkit::RedisServer;

mod common;
use common::{node, send};

const TOKEN: &str = "sixteen-or-more-characters";

/// Read-only by default (403); with controls, no token or another one is 401; a token
/// shorter than 16 characters is refused when the dashboard is built; a bad kind, an
/// unknown session and a body that is not the control's JSON are refused; with the token
/// the drain and the undrain run.
#[tokio::test]
async fn controls_are_off_by_default_refused_without_the_token_and_bad_requests_change_nothing() {
    let redis = RedisServer::start().expect("redis-server");
    let rt = node(&redis.url()).await;
    let bearer = format!("Bearer {TOKEN}");
    let auth = [("Authorization", bearer.as_str())];

    let read_only = Dashboard::new(rt.operator())
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let (code, body) = send(
        read_only.local_addr(),
        "POST",
        "/api/control/drain",
        &auth,
        "",
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert!(!rt.status().draining);

    let short = Dashboard::new(rt.operator()).controls(rt.controls(), "short");
    assert!(short.is_err_and(|e| e.is(zlink::ErrorKind::InvalidOperation)));

    let dashboard = Dashboard::new(rt.operator())
        .controls(rt.controls(), TOKEN)
        .unwrap()
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = dashboard.local_addr();
    for headers in [
        vec![],
        vec![("Authorization", "Bearer sixteen-or-more-characterz")],
        vec![("Authorization", TOKEN)],
    ] {
        let (code, _) = send(addr, "POST", "/api/control/drain", &headers, "").await;
        assert_eq!(code, 401, "{headers:?}");
    }
    assert!(!rt.status().draining, "a refused drain did nothing");

    let (code, body) = send(
        addr,
        "POST",
        "/api/control/relocate",
        &auth,
        r#"{"kind":"planet","id":"x"}"#,
    )
    .await;
    assert_eq!(code, 400, "{body}");
    let (code, body) = send(
        addr,
        "POST",
        "/api/control/relocate",
        &auth,
        r#"{"kind":"actor","id":"nobody-here"}"#,
    )
    .await;
    assert_eq!(code, 404, "{body}");
    let (code, body) = send(
        addr,
        "POST",
        "/api/control/disconnect",
        &auth,
        r#"{"listener":"none","session":7}"#,
    )
    .await;
    assert_eq!(code, 404, "{body}");
    let (code, _) = send(addr, "POST", "/api/control/reclaim", &auth, "{not json").await;
    assert!((400..500).contains(&code), "{code}");
    let oversized = format!(r#"{{"node":"{}"}}"#, "x".repeat(64 * 1024));
    let (code, _) = send(addr, "POST", "/api/control/reclaim", &auth, &oversized).await;
    assert_eq!(code, 413);

    let (code, body) = send(addr, "POST", "/api/control/drain", &auth, "").await;
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("\"complete\":true"), "{body}");
    assert!(rt.status().draining);
    let (code, _) = send(addr, "POST", "/api/control/undrain", &auth, "").await;
    assert_eq!(code, 200);
    assert!(!rt.status().draining);
    let (code, body) = send(
        addr,
        "POST",
        "/api/control/reclaim",
        &auth,
        r#"{"node":"long-gone"}"#,
    )
    .await;
    assert_eq!(code, 200, "{body}");
    rt.shutdown().await;
}
