//! Configuration validation: every problem of one builder is reported together, before any
//! socket is bound.

use zlink::{Error, Handlers, PeerSpec, Runtime};
use zlink_tests::*;

#[test]
fn all_configuration_errors_of_one_builder_are_reported_together() {
    let dup = || {
        Handlers::new()
            .on_request(|_c, e: Echo| async move {
                Ok(Echoed {
                    text: e.text,
                    by: String::new(),
                    trace: None,
                })
            })
            .on_request(|_c, e: Echo| async move {
                Ok(Echoed {
                    text: e.text,
                    by: String::new(),
                    trace: None,
                })
            })
    };
    let err = Runtime::builder()
        // no mesh_name
        .rid("")
        .listen("not-an-endpoint")
        .peer(PeerSpec::new("tcp://127.0.0.1:notaport"))
        .channel_server_weighted("echo", Handlers::new(), 10_001)
        .channel_client("echo")
        .channel_server("dup", dup())
        .send_timeout(std::time::Duration::ZERO)
        .build()
        .err()
        .expect("invalid");
    let Error::Config(violations) = err else {
        panic!("expected a configuration error")
    };
    let settings: Vec<&str> = violations.iter().map(|v| v.setting.as_str()).collect();
    for expected in [
        "mesh_name",
        "rid",
        "listen",
        "peer[0] endpoint",
        "channel \"echo\" weight",
        "channel \"echo\"",
        "channel \"dup\" packet \"Echo\"",
        "send_timeout",
    ] {
        assert!(
            settings.contains(&expected),
            "missing {expected:?} in {settings:?}"
        );
    }
}

#[test]
fn a_valid_builder_builds_and_generates_a_rid() {
    let config = Runtime::builder()
        .mesh_name("m")
        .listen("tcp://127.0.0.1:0")
        .channel_client("echo")
        .build()
        .unwrap();
    assert!(config.rid().starts_with("node-"));
}

#[tokio::test]
async fn start_fails_cleanly_when_the_endpoint_is_taken() {
    let a = server("a", 100).await;
    let err = node("b")
        .listen(a.endpoint())
        .channel_client("echo")
        .build()
        .unwrap()
        .start()
        .await;
    assert!(err
        .err()
        .is_some_and(|e| e.is(zlink::ErrorKind::Unavailable)));
    a.shutdown().await;
}

#[test]
fn location_store_settings_are_checked_with_everything_else() {
    use std::time::Duration;
    use zlink::store::OwnerLeaseSettings;
    let store: std::sync::Arc<dyn zlink::store::LocationStore> =
        std::sync::Arc::new(zlink_testkit::MemoryLocationStore::new());
    // renew 5 s + timeout 3 s is not below ttl 12 s - margin 5 s.
    let tight = OwnerLeaseSettings {
        ttl: Duration::from_secs(12),
        ..OwnerLeaseSettings::default()
    };
    let err = node("x")
        .location_store(store)
        .owner_lease(tight)
        .discovery_interval(Duration::ZERO)
        .store_failure_grace(Duration::ZERO)
        .build()
        .err()
        .expect("invalid");
    let Error::Config(violations) = err else {
        panic!("not a config error: {err}")
    };
    let settings: Vec<&str> = violations.iter().map(|v| v.setting.as_str()).collect();
    assert_eq!(
        settings,
        ["owner lease", "discovery_interval", "store_failure_grace"]
    );
    assert!(violations[0]
        .problem
        .contains("must be less than ttl - fencing margin"));

    let err = node("y")
        .owner_lease(OwnerLeaseSettings::default())
        .build()
        .err()
        .expect("lease without store");
    assert!(err.to_string().contains("needs a Location Store"), "{err}");
}
