//! The 64-byte ZMTP 3 greeting: signature, version, mechanism, as-server flag.

/// Length of a ZMTP 3 greeting.
pub(crate) const GREETING_LEN: usize = 64;

/// The security mechanisms the engine speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mechanism {
    Null,
    Curve,
}

impl Mechanism {
    fn name(self) -> &'static [u8] {
        match self {
            Mechanism::Null => b"NULL",
            Mechanism::Curve => b"CURVE",
        }
    }
}

/// What a peer's greeting announced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PeerGreeting {
    pub(crate) minor: u8,
    pub(crate) mechanism: Option<Mechanism>,
    pub(crate) as_server: bool,
}

/// Our greeting: ZMTP `3.minor` with `mechanism`.
pub(crate) fn greeting(minor: u8, mechanism: Mechanism, as_server: bool) -> [u8; GREETING_LEN] {
    let mut g = [0u8; GREETING_LEN];
    g[0] = 0xFF;
    g[9] = 0x7F;
    g[10] = 3;
    g[11] = minor;
    let name = mechanism.name();
    g[12..12 + name.len()].copy_from_slice(name);
    g[32] = u8::from(as_server);
    g
}

/// Parses a peer's greeting; `Err` names what is wrong. An unknown mechanism parses (as
/// `None`) so the caller can say which one it was refused for.
pub(crate) fn parse(g: &[u8; GREETING_LEN]) -> Result<PeerGreeting, &'static str> {
    if g[0] != 0xFF || g[9] & 0x01 != 0x01 {
        return Err("not a ZMTP greeting");
    }
    if g[10] < 3 {
        return Err("ZMTP version below 3");
    }
    let mechanism = &g[12..32];
    let end = mechanism.iter().position(|b| *b == 0).unwrap_or(20);
    let mechanism = match &mechanism[..end] {
        b"NULL" => Some(Mechanism::Null),
        b"CURVE" => Some(Mechanism::Curve),
        _ => None,
    };
    Ok(PeerGreeting {
        minor: if g[10] > 3 { 1 } else { g[11] },
        mechanism,
        as_server: g[32] == 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greetings_round_trip_and_garbage_is_refused() {
        let g = greeting(1, Mechanism::Curve, true);
        assert_eq!(
            parse(&g),
            Ok(PeerGreeting {
                minor: 1,
                mechanism: Some(Mechanism::Curve),
                as_server: true
            })
        );
        assert!(parse(&[0u8; 64]).is_err());
        let mut old = greeting(0, Mechanism::Null, false);
        old[10] = 2;
        assert_eq!(parse(&old), Err("ZMTP version below 3"));
        let mut plain = greeting(0, Mechanism::Null, false);
        plain[12..17].copy_from_slice(b"PLAIN");
        assert_eq!(parse(&plain).map(|p| p.mechanism), Ok(None));
    }
}
