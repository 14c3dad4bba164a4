//! The dashboard page in a real browser: headless Chromium driven through chromedriver
//! (Debian's `chromium` and `chromium-driver`, always the same version), against a
//! three-node mesh over real TCP and Redis. A browser that cannot start fails the test.

use std::time::{Duration, Instant};

use zlink_dashboard::Dashboard;
use zlink_tests::browser::Browser;
use zlink_tests::relocating::mesh_custom;
use zlink_tests::*;

const WAIT: Duration = Duration::from_secs(15);
const TOKEN: &str = "a-control-token-for-the-test";

/// In headless Chromium, the dashboard of one node of three shows every node, finds an
/// object's node by search, lists a relocation the test starts within 2 s, refuses the
/// drain control without the token (nothing moves), and with the token drains the node:
/// its objects move to the other server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_in_chromium_shows_the_mesh_finds_objects_streams_moves_and_guards_its_controls(
) {
    // Both servers take new Actors, so a drain of one has somewhere to go.
    let m = mesh_custom(&["dash-a", "dash-b"], 0, |_, _, builder| {
        builder.placement_weight(100)
    })
    .await;
    let (a, b, client) = (&m.nodes[0], &m.nodes[1], &m.nodes[2]);
    for i in 1..=3 {
        let id = format!("dash-{i}");
        let actor = client.actors().create(&id, "counter").await.unwrap();
        if actor.rid == "dash-b" {
            b.actors().relocate(&id, Some("dash-a")).await.unwrap();
        }
    }
    assert_eq!(a.status().actors_owned, 3);
    let dashboard = Dashboard::new(a.operator())
        .controls(a.controls(), TOKEN)
        .expect("a long enough token")
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .expect("bound");
    let browser = Browser::start().await;
    browser
        .client
        .goto(&format!("http://{}/", dashboard.local_addr()))
        .await
        .expect("the page loads");

    // Every node of the mesh, and the page is live.
    browser.wait_text("connection", &["live"], WAIT).await;
    browser
        .wait_text("nodes", &["dash-a", "dash-b", "client"], WAIT)
        .await;

    // "Where is Spot X": the search names the node and the generation.
    browser.type_into("search-id", "dash-2").await;
    browser.click("search-go").await;
    let found = browser
        .wait_text("where", &["Actor", "dash-2", "dash-a"], WAIT)
        .await;
    assert!(found.contains("ready"), "{found}");

    // A relocation started here appears in the live event list within 2 s.
    let started = Instant::now();
    a.actors().relocate("dash-1", Some("dash-b")).await.unwrap();
    browser
        .wait_text(
            "events",
            &["relocation_ended", "dash-1", "moved"],
            Duration::from_secs(2).saturating_sub(started.elapsed()),
        )
        .await;

    // Without the token the drain is refused, and nothing moves.
    browser.click("drain").await;
    browser
        .wait_text("control-result", &["refused 401"], WAIT)
        .await;
    assert_eq!(a.status().actors_owned, 2);
    assert!(!a.status().draining);

    // With it, the drain moves the node's objects to the other server.
    browser.type_into("token", TOKEN).await;
    browser.click("drain").await;
    browser
        .wait_text("control-result", &["done 200", "dash-2", "dash-3"], WAIT)
        .await;
    assert_eq!(a.status().actors_owned, 0);
    assert!(a.status().draining);
    for id in ["dash-2", "dash-3"] {
        let now = client
            .actors()
            .find(id)
            .await
            .unwrap()
            .expect("still exists");
        assert_eq!(now.rid, "dash-b", "{id}");
    }
    browser
        .wait_text("events", &["host_state", "draining"], WAIT)
        .await;

    // To look at the page: ZLINK_DASHBOARD_SCREENSHOT=/tmp/dashboard.png cargo test …
    if let Ok(path) = std::env::var("ZLINK_DASHBOARD_SCREENSHOT") {
        let png = browser.client.screenshot().await.expect("a screenshot");
        std::fs::write(path, png).expect("the screenshot written");
    }
    browser.close().await;
    stop(m.nodes).await;
}
