//! Bind address vs advertised address: a listener binds an interface (possibly a
//! wildcard) but tells others an address they can dial.

/// Whether `endpoint` (`scheme://host:port`) binds a wildcard host (`0.0.0.0`, `::`, `*`).
pub fn binds_wildcard(endpoint: &str) -> bool {
    host_of(endpoint).is_some_and(|host| matches!(host, "0.0.0.0" | "::" | "[::]" | "*"))
}

/// Whether `endpoint` binds only a loopback interface (`127.0.0.0/8`, `::1`, `localhost`).
pub fn is_loopback(endpoint: &str) -> bool {
    host_of(endpoint).is_some_and(|host| {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    })
}

fn host_of(endpoint: &str) -> Option<&str> {
    let rest = endpoint.split_once("://")?.1;
    Some(rest.rsplit_once(':')?.0)
}

/// The endpoint others dial: `bound` (with the real port) with its host replaced by
/// `advertise_host` when one is given.
pub fn advertised(bound: &str, advertise_host: Option<&str>) -> String {
    let Some(host) = advertise_host else {
        return bound.to_string();
    };
    match bound.split_once("://").and_then(|(scheme, rest)| {
        rest.rsplit_once(':')
            .map(|(_, port)| format!("{scheme}://{host}:{port}"))
    }) {
        Some(endpoint) => endpoint,
        None => bound.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_are_recognised_and_replaced_by_the_advertised_host() {
        assert!(binds_wildcard("tcp://0.0.0.0:0"));
        assert!(binds_wildcard("tcp://[::]:5600"));
        assert!(!binds_wildcard("tcp://127.0.0.1:0"));
        assert_eq!(
            advertised("tcp://0.0.0.0:41234", Some("10.0.0.5")),
            "tcp://10.0.0.5:41234"
        );
        assert_eq!(advertised("tcp://127.0.0.1:9", None), "tcp://127.0.0.1:9");
        assert!(is_loopback("tcp://127.0.0.1:0") && is_loopback("tcp://[::1]:5"));
        assert!(is_loopback("tcp://localhost:5"));
        assert!(!is_loopback("tcp://0.0.0.0:5") && !is_loopback("tcp://10.1.2.3:5"));
    }
}
