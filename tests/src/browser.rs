//! A headless Chromium driven through chromedriver (Debian's `chromium` and
//! `chromium-driver`, always the same version), for the tests of web pages. A browser
//! that cannot start fails the test; it never skips.

use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use tokio::process::{Child, Command};

/// How long the browser may take to start.
const WAIT: Duration = Duration::from_secs(15);

/// A headless Chromium session, and the chromedriver that runs it. Dropping it (a test
/// that panicked included) kills chromedriver and every Chromium process it started:
/// they run in a process group of their own.
pub struct Browser {
    /// The WebDriver session.
    pub client: Client,
    driver: Child,
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Chromium's processes outlive a killed chromedriver: the whole group goes.
        if let Some(group) = self.driver.id() {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{group}")])
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session; panics (fails the test) when
    /// either cannot start.
    pub async fn start() -> Browser {
        let port = free_port();
        let driver = Command::new(binary("ZLINK_CHROMEDRIVER", &["/usr/bin/chromedriver"]))
            .arg(format!("--port={port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .process_group(0)
            .spawn()
            .expect("chromedriver starts (Debian: apt-get install chromium chromium-driver)");
        let url = format!("http://127.0.0.1:{port}");
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".into(),
            serde_json::json!({
                "binary": binary("ZLINK_CHROMIUM", &["/usr/lib/chromium/chromium", "/usr/bin/chromium"]),
                // CI runs as root, where Chromium's sandbox cannot start.
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000"],
            }),
        );
        let deadline = Instant::now() + WAIT;
        let client = loop {
            let connected = ClientBuilder::new(HttpConnector::new())
                .capabilities(capabilities.clone())
                .connect(&url)
                .await;
            match connected {
                Ok(client) => break client,
                // chromedriver takes a moment to listen.
                Err(e) if Instant::now() < deadline => {
                    tracing::debug!(error = %e, "chromedriver not ready yet");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("no headless Chromium session through chromedriver: {e}"),
            }
        };
        Browser { client, driver }
    }

    /// Ends the session (Chromium quits), then chromedriver.
    pub async fn close(self) {
        let _ = self.client.clone().close().await;
    }

    /// The text of element `#id`.
    pub async fn text(&self, id: &str) -> String {
        match self.client.find(Locator::Id(id)).await {
            Ok(element) => element.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        }
    }

    /// Waits until the text of `#id` holds every one of `wanted`; returns it.
    pub async fn wait_text(&self, id: &str, wanted: &[&str], within: Duration) -> String {
        let holds_all = |text: &str| wanted.iter().all(|w| text.contains(w));
        self.wait_text_until(id, &format!("{wanted:?}"), holds_all, within)
            .await
    }

    /// Waits until the text of `#id` satisfies `done` (which `wanted` describes for the
    /// failure message); returns it.
    pub async fn wait_text_until(
        &self,
        id: &str,
        wanted: &str,
        done: impl Fn(&str) -> bool,
        within: Duration,
    ) -> String {
        let deadline = Instant::now() + within;
        loop {
            let text = self.text(id).await;
            if done(&text) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "#{id} never showed {wanted} within {within:?}; it shows: {text}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until `#id` is enabled (a page enables its inputs once it is ready for them).
    pub async fn wait_enabled(&self, id: &str, within: Duration) {
        let deadline = Instant::now() + within;
        let script = format!("return !document.getElementById('{id}')?.disabled;");
        loop {
            let enabled = self.client.execute(&script, Vec::new()).await;
            if matches!(enabled, Ok(serde_json::Value::Bool(true))) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "#{id} never enabled within {within:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Clicks `#id`. A page may rebuild the element between finding and clicking it (a
    /// panel's periodic refresh): the click is tried again on the new one, for up to 5 s.
    pub async fn click(&self, id: &str) {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let clicked = match self.client.find(Locator::Id(id)).await {
                Ok(element) => element.click().await.map(|_| ()),
                Err(e) => Err(e),
            };
            match clicked {
                Ok(()) => return,
                Err(e) if Instant::now() >= deadline => panic!("click #{id}: {e}"),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// Types `text` into `#id`, replacing what it held.
    pub async fn type_into(&self, id: &str, text: &str) {
        let field = self
            .client
            .find(Locator::Id(id))
            .await
            .unwrap_or_else(|e| panic!("#{id}: {e}"));
        field.clear().await.expect("clear");
        field.send_keys(text).await.expect("type");
    }
}

/// The first of `candidates` that exists, unless `variable` names another.
fn binary(variable: &str, candidates: &[&str]) -> String {
    std::env::var(variable).unwrap_or_else(|_| {
        candidates
            .iter()
            .find(|path| std::path::Path::new(path).exists())
            .unwrap_or(&candidates[0])
            .to_string()
    })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}
