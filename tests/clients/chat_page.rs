//! The gateway chat's page in headless Chromium: the JavaScript STREAM client logs in,
//! chats, keeps chatting through a drain of its player's node on the same session, and
//! comes back as a new session when its binding is taken over; the module's own requests,
//! errors and close reasons, called from the page.

use std::time::{Duration, Instant};

use serde_json::json;
use zlink_examples::chat::client::{self, Transport};
use zlink_examples::chat::{page, ChatMesh, ClientPorts};
use zlink_examples::setup::Security;
use zlink_tests::browser::Browser;

const WAIT: Duration = Duration::from_secs(15);

/// Says `text` from the page.
async fn say(browser: &Browser, text: &str) {
    browser.type_into("text", text).await;
    browser.click("send").await;
}

/// The `data-*` fields of every line the page shows: (seq, from, via-less text).
async fn lines(browser: &Browser) -> Vec<(u64, String)> {
    let shown = browser
        .client
        .execute(
            "return [...document.querySelectorAll('#lines p.line')].map(p => [Number(p.dataset.seq), p.textContent]);",
            vec![],
        )
        .await
        .expect("the page's lines");
    serde_json::from_value(shown).expect("[seq, text] pairs")
}

async fn wait_lines(browser: &Browser, count: usize) -> Vec<(u64, String)> {
    let deadline = Instant::now() + WAIT;
    loop {
        let shown = lines(browser).await;
        if shown.len() >= count {
            return shown;
        }
        assert!(
            Instant::now() < deadline,
            "{count} lines never showed: {shown:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_page_chats_through_a_drain_on_one_session_and_reconnects_when_taken_over() {
    zlink_testkit::init_tracing();
    let mesh = ChatMesh::start(&ClientPorts::default(), &Security::default())
        .await
        .expect("the chat nodes start");
    let (tcp, ws) = mesh.addresses();
    let page = page::serve(0, &format!("ws://{ws}/"))
        .await
        .expect("the page is served");
    let browser = Browser::start().await;
    browser
        .client
        .goto(&format!("http://{page}/"))
        .await
        .expect("the page opens");
    browser.type_into("name", "ann").await;
    browser.type_into("room", "lobby").await;
    browser.click("enter").await;
    browser.wait_text("status", &["connected"], WAIT).await;
    let first_node = browser.wait_text("node", &["players-"], WAIT).await;
    // The page names the node once logged in and enables its input once in the room.
    browser.wait_enabled("text", WAIT).await;
    for n in 1..=5 {
        say(&browser, &format!("before {n}")).await;
    }
    wait_lines(&browser, 5).await;

    // The player's node is drained: the page keeps its session and hears every line.
    mesh.drain(&first_node).await.expect("the drain");
    for n in 1..=5 {
        say(&browser, &format!("after {n}")).await;
    }
    let shown = wait_lines(&browser, 10).await;
    let seqs: Vec<u64> = shown.iter().map(|(seq, _)| *seq).collect();
    let first = seqs[0];
    assert_eq!(
        seqs,
        (first..first + 10).collect::<Vec<_>>(),
        "every line once, in order"
    );
    assert!(shown[9].1.contains("after 5"), "{shown:?}");
    assert!(
        !shown[9].1.contains(&format!("via {first_node}")),
        "the player runs elsewhere now: {shown:?}"
    );
    assert_eq!(
        browser.text("sessions").await,
        "1",
        "the same session throughout"
    );
    assert!(browser.text("status").await.contains("connected"));

    // Another client logs in as ann: the page's session ends (ServerDrain), and the
    // client reconnects as a new session, which logs in again.
    let (other, mut answers) = client::connect(&tcp, Transport::Tcp)
        .await
        .expect("a second client");
    other
        .request(1, "login", &json!({ "name": "ann" }))
        .await
        .expect("the login goes out");
    let mut early = Vec::new();
    client::answer(&mut answers, 1, WAIT, &mut early)
        .await
        .expect("the takeover is answered");
    browser.wait_text("sessions", &["2"], WAIT).await;
    browser
        .wait_text("status", &["connected again"], WAIT)
        .await;
    let _ = other.close().await;

    // The module itself, from the page: a request, an Error's kind, a Raw refusal and a
    // close's reason.
    let checked = browser
        .client
        .execute_async(
            r#"const [url, done] = arguments;
            import('/zlink-stream.js').then(async ({ StreamClient, Codec }) => {
              const c = new StreamClient(url, { reconnect: false });
              await c.connect();
              const welcome = await c.request('login', { name: 'probe' });
              let missing, raw;
              try { await c.request('no-such-packet', {}); } catch (e) { missing = e.kind; }
              try { await c.request('where', new Uint8Array([1, 2]), { codec: Codec.Raw }); }
              catch (e) { raw = e.kind; }
              const closed = new Promise((resolve) => c.on('close', resolve));
              c.close('probe done');
              const close = await closed;
              done({ node: welcome.node, missing, raw, reason: close.reasonName, state: c.state });
            }).catch((e) => done({ failed: String(e) }));"#,
            vec![json!(format!("ws://{ws}/"))],
        )
        .await
        .expect("the in-page checks run");
    assert!(
        checked["node"]
            .as_str()
            .is_some_and(|n| n.starts_with("players-")),
        "{checked}"
    );
    assert_eq!(checked["missing"], "NotFound", "{checked}");
    assert!(
        checked["raw"].is_string(),
        "a Raw payload the JSON handler refuses: {checked}"
    );
    assert_eq!(checked["reason"], "ClientClose", "{checked}");
    assert_eq!(checked["state"], "closed", "{checked}");
    browser.close().await;
    mesh.shutdown().await;
}
