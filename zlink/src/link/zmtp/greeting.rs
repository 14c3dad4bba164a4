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

    use proptest::collection::vec;
    use proptest::prelude::*;

    fn config(cases: u32) -> ProptestConfig {
        ProptestConfig {
            cases,
            failure_persistence: None,
            ..ProptestConfig::default()
        }
    }

    fn mechanism() -> impl Strategy<Value = Mechanism> {
        prop_oneof![Just(Mechanism::Null), Just(Mechanism::Curve)]
    }

    proptest! {
        #![proptest_config(config(20_000))]

        /// Any 64 bytes parse or are refused, and what parses is what the bytes say.
        #[test]
        fn arbitrary_greetings_parse_or_are_refused_without_panicking(
            bytes in vec(any::<u8>(), GREETING_LEN),
        ) {
            let g: [u8; GREETING_LEN] = bytes.try_into().expect("64 bytes");
            match parse(&g) {
                Err(_) => prop_assert!(g[0] != 0xFF || g[9] & 0x01 == 0 || g[10] < 3),
                Ok(peer) => {
                    prop_assert!(g[0] == 0xFF && g[9] & 0x01 == 0x01 && g[10] >= 3);
                    prop_assert_eq!(peer.as_server, g[32] == 1);
                    prop_assert_eq!(peer.minor, if g[10] > 3 { 1 } else { g[11] });
                    let name_end = g[12..32].iter().position(|b| *b == 0).map_or(32, |at| 12 + at);
                    let expected = match &g[12..name_end] {
                        b"NULL" => Some(Mechanism::Null),
                        b"CURVE" => Some(Mechanism::Curve),
                        _ => None,
                    };
                    prop_assert_eq!(peer.mechanism, expected);
                }
            }
        }
    }

    proptest! {
        #![proptest_config(config(10_000))]

        /// Our own greetings parse back to what they announce.
        #[test]
        fn our_greetings_round_trip(minor in any::<u8>(), mechanism in mechanism(), as_server in any::<bool>()) {
            prop_assert_eq!(
                parse(&greeting(minor, mechanism, as_server)),
                Ok(PeerGreeting { minor, mechanism: Some(mechanism), as_server })
            );
        }

        /// A greeting with one byte changed parses or is refused; a change in the padding
        /// or the filler (bytes 1..9 and 33..64) changes nothing.
        #[test]
        fn a_mutated_greeting_parses_or_is_refused(
            minor in any::<u8>(),
            mechanism in mechanism(),
            as_server in any::<bool>(),
            at in 0..GREETING_LEN,
            bits in 1..=255u8,
        ) {
            let valid = greeting(minor, mechanism, as_server);
            let mut g = valid;
            g[at] ^= bits;
            let parsed = parse(&g);
            if (1..9).contains(&at) || (33..GREETING_LEN).contains(&at) {
                prop_assert_eq!(parsed, parse(&valid));
            }
            if at == 0 || (at == 10 && g[10] < 3) || (at == 9 && g[9] & 0x01 == 0) {
                prop_assert!(parsed.is_err());
            }
        }
    }
}
