//! An application's panel over real HTTP: listed for the page, its page and reads open,
//! its other methods guarded like the controls.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use axum::routing::get;
use axum::Router;
use zlink_dashboard::{Dashboard, Panel};
use zlink_testkit::RedisServer;

mod common;
use common::{get as fetch, node, send};

const TOKEN: &str = "sixteen-or-more-characters";

#[derive(serde::Deserialize)]
struct Said {
    text: String,
}

fn counting_panel(runs: &Arc<AtomicU32>) -> Panel {
    let runs = runs.clone();
    let router = Router::new()
        .route("/", get(|| async { "<p>the panel's page</p>" }))
        .route(
            "/press",
            get(|| async { "read" }).post(move || {
                let runs = runs.clone();
                async move { runs.fetch_add(1, Ordering::SeqCst).to_string() }
            }),
        )
        .route(
            "/say",
            axum::routing::post(|axum::Json(said): axum::Json<Said>| async move { said.text }),
        );
    Panel::new("lights", "Lights", router).expect("a panel")
}

#[tokio::test]
async fn a_panel_is_listed_its_reads_are_open_and_its_other_methods_need_the_controls_token() {
    let redis = RedisServer::start().expect("redis-server");
    let rt = node(&redis.url()).await;
    let runs = Arc::new(AtomicU32::new(0));
    let read_only = Dashboard::new(rt.operator())
        .panel(counting_panel(&runs))
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = read_only.local_addr();
    let (code, listed) = fetch(addr, "/api/panels").await;
    assert_eq!(code, 200);
    let listed: serde_json::Value = serde_json::from_str(&listed).expect("JSON");
    assert_eq!(
        listed,
        serde_json::json!([{ "name": "lights", "title": "Lights", "path": "app/lights/" }])
    );
    let (code, page) = fetch(addr, "/app/lights/").await;
    assert_eq!((code, page.as_str()), (200, "<p>the panel's page</p>"));
    assert_eq!(
        fetch(addr, "/app/lights/press").await,
        (200, "read".to_string())
    );
    let bearer = format!("Bearer {TOKEN}");
    let auth = [("Authorization", bearer.as_str())];
    let (code, _) = send(addr, "POST", "/app/lights/press", &auth, "").await;
    assert_eq!(code, 403, "controls are off: the panel's controls too");

    let controlled = Dashboard::new(rt.operator())
        .controls(rt.controls(), TOKEN)
        .unwrap()
        .panel(counting_panel(&runs))
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = controlled.local_addr();
    let (code, _) = send(addr, "POST", "/app/lights/press", &[], "").await;
    assert_eq!(code, 401);
    let wrong = [("Authorization", "Bearer sixteen-or-more-characterz")];
    let (code, _) = send(addr, "POST", "/app/lights/press", &wrong, "").await;
    assert_eq!(code, 401);
    assert_eq!(runs.load(Ordering::SeqCst), 0, "no refused press ran");
    let (code, body) = send(addr, "POST", "/app/lights/press", &auth, "").await;
    assert_eq!((code, body.as_str()), (200, "0"));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // A panel's body is bounded like a control's, and garbage is refused, not run.
    let (code, body) = send(addr, "POST", "/app/lights/say", &auth, r#"{"text":"hi"}"#).await;
    assert_eq!((code, body.as_str()), (200, "hi"));
    let (code, _) = send(addr, "POST", "/app/lights/say", &auth, "\u{0}not json{").await;
    assert!((400..500).contains(&code), "garbage: {code}");
    let huge = format!(r#"{{"text":"{}"}}"#, "x".repeat(20 * 1024));
    let (code, _) = send(addr, "POST", "/app/lights/say", &auth, &huge).await;
    assert_eq!(code, 413, "over the 16 KiB a control takes");
    rt.shutdown().await;
}
