//! CurveZMQ nonces: 24 bytes, a fixed prefix and then either an 8-byte big-endian counter
//! (a short nonce) or 16 random bytes (a long nonce).

use rand::TryRng;

use super::error::CurveError;

pub(super) const HELLO: &[u8; 16] = b"CurveZMQHELLO---";
pub(super) const INITIATE: &[u8; 16] = b"CurveZMQINITIATE";
pub(super) const READY: &[u8; 16] = b"CurveZMQREADY---";
pub(super) const MESSAGE_FROM_CLIENT: &[u8; 16] = b"CurveZMQMESSAGEC";
pub(super) const MESSAGE_FROM_SERVER: &[u8; 16] = b"CurveZMQMESSAGES";
pub(super) const WELCOME: &[u8; 8] = b"WELCOME-";
pub(super) const COOKIE: &[u8; 8] = b"COOKIE--";
pub(super) const VOUCH: &[u8; 8] = b"VOUCH---";

/// A box nonce.
pub(super) type Nonce = [u8; 24];

/// A short nonce: `prefix` then `counter`, big-endian.
pub(super) fn short(prefix: &[u8; 16], counter: u64) -> Nonce {
    let mut nonce = [0; 24];
    nonce[..16].copy_from_slice(prefix);
    nonce[16..].copy_from_slice(&counter.to_be_bytes());
    nonce
}

/// A long nonce: `prefix` then the 16 bytes sent beside the box.
pub(super) fn long(prefix: &[u8; 8], tail: &[u8; 16]) -> Nonce {
    let mut nonce = [0; 24];
    nonce[..8].copy_from_slice(prefix);
    nonce[8..].copy_from_slice(tail);
    nonce
}

/// 16 fresh random bytes for a long nonce.
pub(super) fn random_tail() -> [u8; 16] {
    let mut tail = [0; 16];
    fill_random(&mut tail);
    tail
}

/// Fills `bytes` from the operating system's generator (or, should it ever fail, from
/// the thread's CSPRNG, which it seeds).
pub(super) fn fill_random(bytes: &mut [u8]) {
    if rand::rngs::SysRng.try_fill_bytes(bytes).is_err() {
        rand::fill(bytes);
    }
}

/// The big-endian counter at `at` in `body`.
pub(super) fn read(body: &[u8], at: usize) -> Result<u64, CurveError> {
    super::crypto::field::<8>(body, at)
        .map(|bytes| u64::from_be_bytes(*bytes))
        .ok_or(CurveError::Malformed("short nonce cut off"))
}

/// The short nonces we send: 1, 2, 3, ...
#[derive(Debug)]
#[cfg_attr(test, derive(Clone))]
pub(super) struct Counter {
    next: u64,
}

impl Counter {
    pub(super) fn new() -> Self {
        Counter { next: 1 }
    }

    #[cfg(test)]
    pub(super) fn starting_at(next: u64) -> Self {
        Counter { next }
    }

    /// The nonce for the next command or message.
    pub(super) fn take(&mut self) -> u64 {
        let nonce = self.next;
        // 2^64 messages are out of reach; saturating keeps this total, and a repeated
        // nonce is refused by the peer as a replay.
        self.next = self.next.saturating_add(1);
        nonce
    }
}

/// The last short nonce the peer used; the next must be larger.
#[derive(Debug)]
#[cfg_attr(test, derive(Clone))]
pub(super) struct PeerNonce {
    last: u64,
}

impl PeerNonce {
    pub(super) fn after(last: u64) -> Self {
        PeerNonce { last }
    }

    /// Refuses `nonce` unless it is above every nonce accepted so far.
    pub(super) fn check(&self, nonce: u64) -> Result<(), CurveError> {
        if nonce > self.last {
            Ok(())
        } else {
            Err(CurveError::Replay)
        }
    }

    /// Records `nonce` once the box it came with has opened.
    pub(super) fn accept(&mut self, nonce: u64) {
        self.last = nonce;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_nonce_is_prefix_then_big_endian_counter() {
        let nonce = short(MESSAGE_FROM_CLIENT, 0x0102_0304_0506_0708);
        assert_eq!(&nonce[..16], b"CurveZMQMESSAGEC");
        assert_eq!(&nonce[16..], &[1, 2, 3, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn long_nonce_is_prefix_then_tail() {
        let tail = [7; 16];
        let nonce = long(COOKIE, &tail);
        assert_eq!(&nonce[..8], b"COOKIE--");
        assert_eq!(&nonce[8..], &tail);
    }

    #[test]
    fn counter_starts_at_one_and_saturates() {
        let mut counter = Counter::new();
        assert_eq!((counter.take(), counter.take()), (1, 2));
        let mut last = Counter::starting_at(u64::MAX);
        assert_eq!((last.take(), last.take()), (u64::MAX, u64::MAX));
    }

    #[test]
    fn peer_nonce_must_increase() {
        let mut peer = PeerNonce::after(2);
        assert!(matches!(peer.check(2), Err(CurveError::Replay)));
        assert!(peer.check(3).is_ok());
        peer.accept(5);
        assert!(matches!(peer.check(4), Err(CurveError::Replay)));
        assert!(peer.check(6).is_ok());
    }

    #[test]
    fn reading_a_cut_off_nonce_fails() {
        assert!(matches!(read(&[0; 7], 0), Err(CurveError::Malformed(_))));
        assert!(matches!(read(&[0; 8], 1), Err(CurveError::Malformed(_))));
        assert!(matches!(
            read(&[0; 8], usize::MAX),
            Err(CurveError::Malformed(_))
        ));
        assert_eq!(read(&[0, 0, 0, 0, 0, 0, 0, 0, 9], 1).expect("fits"), 9);
    }
}
