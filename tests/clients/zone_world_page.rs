//! Zone World in headless Chromium: the game page moves its player across the
//! north-south border with arrow keys (the DOM the page keeps in step with its canvas
//! shows the new cell, zone and node, the generation kept), the ops page drains the
//! player's node from the Zone World panel, and the game page stays on its one session
//! throughout. The screenshot is kept at `target/artifacts/zone-world.png`.

use std::time::Duration;

use fantoccini::key::Key;
use fantoccini::Locator;
use zlink_examples::setup::Security;
use zlink_examples::zone_world::one_process::{OneProcess, Options};
use zlink_tests::browser::Browser;

const WAIT: Duration = Duration::from_secs(15);
const TOKEN: &str = "a-zone-world-ops-token";

/// Presses `key` on the game's map once.
async fn press(browser: &Browser, key: Key) {
    let map = browser.client.find(Locator::Id("map")).await.expect("#map");
    map.send_keys(&key.to_string()).await.expect("a key press");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_game_page_crosses_a_border_by_keys_and_stays_connected_while_the_ops_page_drains_its_node(
) {
    let options = Options {
        port: 0,
        bots: 8,
        token: TOKEN.into(),
    };
    let world = OneProcess::start(&options, &Security::default())
        .await
        .expect("the world starts");
    let browser = Browser::start().await;
    let game = browser.client.window().await.expect("the first window");
    let url = format!("{}?name=smoke", world.game_url());
    browser
        .client
        .goto(&url)
        .await
        .expect("the game page loads");
    browser.wait_text("state", &["connected"], WAIT).await;
    browser.wait_text("pos", &["25,25"], WAIT).await;
    browser.wait_text("node", &["zn-a"], WAIT).await;
    // The login's answer names the node the player was created on, and may arrive after
    // the welcome pushed from its zone's node: the page never lets it replace the newer.
    let shown = browser
        .client
        .execute(
            "return zoneWorld.showPlayer({player: 'smoke', cell: {x: 25, y: 25}, zone: 'nw', \
             node: 'the-creating-node', generation: 1, relocations: 0, version: 1});",
            Vec::new(),
        )
        .await
        .expect("the page's showPlayer runs");
    assert_eq!(
        shown,
        serde_json::Value::Bool(false),
        "an older account is ignored"
    );
    assert_eq!(browser.text("node").await, "zn-a");
    let generation = browser.text("generation").await;
    // The bots show on the map's zone: the page draws what the zone's views say.
    // Five presses of 5 cells south: (25,50), in sw, which zn-b runs.
    for _ in 0..5 {
        press(&browser, Key::Down).await;
    }
    browser.wait_text("pos", &["25,50"], WAIT).await;
    browser.wait_text("zone", &["sw"], WAIT).await;
    browser.wait_text("node", &["zn-b"], WAIT).await;
    assert_eq!(browser.text("relocations").await, "1");
    assert_eq!(
        browser.text("generation").await,
        generation,
        "the same player"
    );
    assert_eq!(browser.text("sessions").await, "session 1");

    // The ops page, in a window of its own: drain zn-b from the Zone World panel.
    let ops = browser.client.new_window(false).await.expect("a window");
    browser
        .client
        .switch_to_window(ops.handle)
        .await
        .expect("to it");
    browser
        .client
        .goto(&world.ops_url())
        .await
        .expect("the ops page loads");
    browser.type_into("token", TOKEN).await;
    let panel = browser
        .client
        .wait()
        .for_element(Locator::Css("#panel-zone-world iframe"))
        .await
        .expect("the Zone World panel");
    panel.enter_frame().await.expect("into the panel");
    browser
        .wait_text("nodes", &["zn-a", "zn-b", "zn-c"], WAIT)
        .await;
    browser.wait_text("zone-sw", &["zn-b"], WAIT).await;
    browser.click("drain-zn-b").await;
    browser
        .wait_text("result", &["drain: done 200"], WAIT)
        .await;
    browser.wait_text("node-zn-b", &["drained"], WAIT).await;
    // A refresh that started during the drain may still show sw on zn-b for a moment.
    browser
        .wait_text_until(
            "zone-sw",
            "sw off zn-b",
            |sw| sw.starts_with("sw") && !sw.contains("zn-b"),
            WAIT,
        )
        .await;

    // Back on the game page: the same session, and the next move is answered from the
    // player's new node.
    browser.client.switch_to_window(game).await.expect("back");
    assert_eq!(browser.text("state").await, "connected");
    assert_eq!(browser.text("sessions").await, "session 1");
    press(&browser, Key::Right).await;
    browser.wait_text("pos", &["30,50"], WAIT).await;
    let node = browser.text("node").await;
    assert!(
        node == "zn-a" || node == "zn-c",
        "the player moved off zn-b: {node}"
    );
    assert_eq!(browser.text("generation").await, generation);
    assert_eq!(
        browser.text("relocations").await,
        "2",
        "the crossing and the drain"
    );

    let png = browser.client.screenshot().await.expect("a screenshot");
    let artifacts = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/artifacts");
    std::fs::create_dir_all(artifacts).expect("the artifacts folder");
    std::fs::write(format!("{artifacts}/zone-world.png"), png).expect("the screenshot written");
    browser.close().await;
    world.shutdown().await;
}
