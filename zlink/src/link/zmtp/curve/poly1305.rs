//! Poly1305 (RFC 8439 §2.5), the one-time authenticator inside every NaCl box, computed
//! with 64-bit limbs.
//!
//! Why not the `poly1305` crate: on a CPU with AVX2 it picks a backend that computes four
//! powers of the key for every new key, and every CURVE frame has a new key. For a frame
//! of a few blocks that set-up cost more than the whole authenticator: measured in the
//! `rpc --curve` benchmark, half of all CPU time went there. This scalar form has no
//! set-up; its results are checked against that crate and the RFC's vectors.

/// The tag of `message` under the one-time `key` (r, then s, little-endian).
pub(super) fn tag(key: &[u8; 32], message: &[u8]) -> [u8; 16] {
    let mut state = State::new(key);
    let mut blocks = message.chunks_exact(16);
    for block in &mut blocks {
        state.absorb(le64(&block[..8]), le64(&block[8..]), 1);
    }
    let rest = blocks.remainder();
    if !rest.is_empty() {
        // A short last block is padded with one 1 byte, then zeros, and gets no 2^128.
        let mut last = [0u8; 16];
        last[..rest.len()].copy_from_slice(rest);
        last[rest.len()] = 1;
        state.absorb(le64(&last[..8]), le64(&last[8..]), 0);
    }
    state.finish(key)
}

fn le64(bytes: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(bytes);
    u64::from_le_bytes(word)
}

/// The accumulator h = h0 + h1·2^64 + h2·2^128 (h2 stays below 8) and the clamped r.
struct State {
    h0: u64,
    h1: u64,
    h2: u64,
    r0: u64,
    r1: u64,
    /// 5·r1/4: r1 is a multiple of 4 after clamping, and 2^130 ≡ 5 (mod 2^130 - 5), so
    /// a product's part at 2^128·r1 folds back to the bottom as h·s1.
    s1: u64,
}

impl State {
    fn new(key: &[u8; 32]) -> Self {
        let r0 = le64(&key[..8]) & 0x0fff_fffc_0fff_ffff;
        let r1 = le64(&key[8..16]) & 0x0fff_fffc_0fff_fffc;
        State {
            h0: 0,
            h1: 0,
            h2: 0,
            r0,
            r1,
            s1: r1 + (r1 >> 2),
        }
    }

    /// h = (h + m) · r mod (2^130 - 5), partly reduced; `high` is the 2^128 bit.
    fn absorb(&mut self, m0: u64, m1: u64, high: u64) {
        let (h0, carry) = self.h0.overflowing_add(m0);
        let (h1, carry1) = self.h1.overflowing_add(carry as u64);
        let (h1, carry2) = h1.overflowing_add(m1);
        let h2 = self.h2 + carry1 as u64 + carry2 as u64 + high;

        let (h0, h1) = (u128::from(h0), u128::from(h1));
        let (r0, r1, s1) = (
            u128::from(self.r0),
            u128::from(self.r1),
            u128::from(self.s1),
        );
        // h·r with the parts at 2^128 and above folded by 2^130 ≡ 5. Bounds: h0, h1 <
        // 2^64, h2 < 8, r0, r1 < 2^60, s1 < 2^61, so no sum overflows 128 bits.
        let d0 = h0 * r0 + h1 * s1;
        let d1 = h0 * r1 + h1 * r0 + u128::from(h2) * s1;
        let d2 = u128::from(h2) * r0;

        let d1 = d1 + (d0 >> 64);
        let d2 = d2 + (d1 >> 64);
        let (h0, h1) = (d0 as u64, d1 as u64);
        // What is at 2^130 and above comes back as 5 times itself.
        let folded = (d2 >> 2) * 5;
        let h2 = (d2 & 3) as u64;
        let sum = u128::from(h0) + folded;
        let h0 = sum as u64;
        let sum = u128::from(h1) + (sum >> 64);
        self.h0 = h0;
        self.h1 = sum as u64;
        self.h2 = h2 + (sum >> 64) as u64;
    }

    /// (h mod 2^130 - 5) + s, mod 2^128, in constant time.
    fn finish(mut self, key: &[u8; 32]) -> [u8; 16] {
        // Fold what is at 2^130 once more: now h < 2^130 + 5·3, below twice the prime.
        let folded = (self.h2 >> 2) * 5;
        self.h2 &= 3;
        let sum = u128::from(self.h0) + u128::from(folded);
        self.h0 = sum as u64;
        let sum = u128::from(self.h1) + (sum >> 64);
        self.h1 = sum as u64;
        self.h2 += (sum >> 64) as u64;
        // g = h + 5 - 2^130; take it when it does not go below 0 (h ≥ the prime).
        let g = u128::from(self.h0) + 5;
        let g0 = g as u64;
        let g = u128::from(self.h1) + (g >> 64);
        let g1 = g as u64;
        let g2 = self.h2 + (g >> 64) as u64;
        let take_g = ((g2 >> 2) & 1).wrapping_neg();
        let h0 = (self.h0 & !take_g) | (g0 & take_g);
        let h1 = (self.h1 & !take_g) | (g1 & take_g);

        let t = u128::from(h0) + u128::from(le64(&key[16..24]));
        let t0 = t as u64;
        let t1 = h1
            .wrapping_add(le64(&key[24..32]))
            .wrapping_add((t >> 64) as u64);
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&t0.to_le_bytes());
        out[8..].copy_from_slice(&t1.to_le_bytes());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crypto_box::aead::generic_array::GenericArray;
    use poly1305::universal_hash::KeyInit;
    use proptest::prelude::*;

    fn reference(key: &[u8; 32], message: &[u8]) -> [u8; 16] {
        poly1305::Poly1305::new(GenericArray::from_slice(key))
            .compute_unpadded(message)
            .into()
    }

    #[test]
    fn rfc8439_section_2_5_2_vector() {
        let key = [
            0x85, 0xd6, 0xbe, 0x78, 0x57, 0x55, 0x6d, 0x33, 0x7f, 0x44, 0x52, 0xfe, 0x42, 0xd5,
            0x06, 0xa8, 0x01, 0x03, 0x80, 0x8a, 0xfb, 0x0d, 0xb2, 0xfd, 0x4a, 0xbf, 0xf6, 0xaf,
            0x41, 0x49, 0xf5, 0x1b,
        ];
        let expected = [
            0xa8, 0x06, 0x1d, 0xc1, 0x30, 0x51, 0x36, 0xc6, 0xc2, 0x2b, 0x8b, 0xaf, 0x0c, 0x01,
            0x27, 0xa9,
        ];
        assert_eq!(tag(&key, b"Cryptographic Forum Research Group"), expected);
    }

    #[test]
    fn limbs_at_their_largest_reduce_correctly() {
        // RFC 8439 appendix A.3 vectors 5-7 style: accumulators that reach and cross the
        // prime, checked against the reference implementation.
        let mut key = [0u8; 32];
        key[0] = 2;
        for message in [[0xffu8; 16].to_vec(), [0xffu8; 48].to_vec(), vec![0xff; 17]] {
            assert_eq!(tag(&key, &message), reference(&key, &message));
        }
        let key = [0xffu8; 32];
        for len in [0, 1, 15, 16, 17, 31, 32, 33, 64, 200] {
            let message = vec![0xffu8; len];
            assert_eq!(tag(&key, &message), reference(&key, &message), "len {len}");
        }
    }

    proptest! {
        #[test]
        fn agrees_with_the_poly1305_crate(
            key in any::<[u8; 32]>(),
            message in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            prop_assert_eq!(tag(&key, &message), reference(&key, &message));
        }
    }
}
