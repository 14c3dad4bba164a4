//! Key agreement exactly as NaCl's `crypto_box_beforenm` (which libzmq calls) does it:
//! X25519 of the peer's key with our clamped secret, then HSalsa20 of that shared secret
//! with 16 zero input bytes, as the key of an XSalsa20Poly1305 box.
//!
//! crypto_box 0.9's `SalsaBox::new` is not used. Its `SecretKey` keeps the clamped secret
//! reduced mod ℓ (the prime order of the base point). That changes nothing for a peer
//! point of prime order, but the clamped integer is a multiple of 8 and so wipes out any
//! small-order component of the peer's point, while its residue mod ℓ in general does
//! not: with a peer key that is a valid key plus a point of order 8 (which no small-order
//! list catches), the shared secret then depends on `(k mod ℓ) mod 8`. The peer can try
//! the eight candidate keys and so learn three bits of our long-term secret, and it would
//! disagree with libsodium, which multiplies by the clamped, unreduced integer, as here.

use std::sync::Arc;

use curve25519_dalek::montgomery::MontgomeryPoint;
use salsa20::cipher::consts::U10;
use salsa20::cipher::generic_array::GenericArray;
use salsa20::hsalsa;
use zeroize::{Zeroize, Zeroizing};

use super::crypto::{same, SharedBox};
use super::error::CurveError;

/// An X25519 secret key: its 32 bytes as generated or read, kept whole (wiped on drop)
/// because NaCl multiplies by the clamped bytes themselves, and the public key they give.
#[derive(Clone)]
pub(super) struct Secret {
    bytes: Zeroizing<[u8; 32]>,
    public: [u8; 32],
}

impl Secret {
    /// A fresh random secret.
    pub(super) fn generate() -> Self {
        let mut bytes = Zeroizing::new([0; 32]);
        super::nonce::fill_random(&mut bytes[..]);
        Secret::from_zeroizing(bytes)
    }

    /// The secret with these bytes (any 32 bytes; X25519 clamps them).
    pub(super) fn from_bytes(bytes: [u8; 32]) -> Self {
        Secret::from_zeroizing(Zeroizing::new(bytes))
    }

    /// The bytes as given, unclamped: what libzmq and czmq write as the secret key.
    pub(super) fn as_bytes(&self) -> &[u8; 32] {
        &self.bytes
    }

    /// X25519(clamp(secret), 9), the public key libsodium's `crypto_scalarmult_base` gives.
    pub(super) fn public(&self) -> &[u8; 32] {
        &self.public
    }

    fn from_zeroizing(bytes: Zeroizing<[u8; 32]>) -> Self {
        let public = MontgomeryPoint::mul_base_clamped(*bytes).to_bytes();
        Secret { bytes, public }
    }
}

/// The u-coordinates of the points of small order on Curve25519 and its twist, the
/// last two in non-canonical form (the list libsodium refuses). A shared secret with such
/// a key takes only a handful of values, which anyone can try.
const SMALL_ORDER: [[u8; 32]; 7] = [
    // 0 (order 2)
    [0; 32],
    // 1 (order 4)
    le_small(1),
    // The two points of order 8.
    [
        0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae, 0x16, 0x56, 0xe3, 0xfa, 0xf1, 0x9f, 0xc4,
        0x6a, 0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32, 0xb1, 0xfd, 0x86, 0x62, 0x05, 0x16, 0x5f, 0x49,
        0xb8, 0x00,
    ],
    [
        0x5f, 0x9c, 0x95, 0xbc, 0xa3, 0x50, 0x8c, 0x24, 0xb1, 0xd0, 0xb1, 0x55, 0x9c, 0x83, 0xef,
        0x5b, 0x04, 0x44, 0x5c, 0xc4, 0x58, 0x1c, 0x8e, 0x86, 0xd8, 0x22, 0x4e, 0xdd, 0xd0, 0x9f,
        0x11, 0x57,
    ],
    // p - 1 (order 4, on the twist), then p and p + 1 (0 and 1 again).
    p_plus(-1),
    p_plus(0),
    p_plus(1),
];

/// `n` as a little-endian field element.
const fn le_small(n: u8) -> [u8; 32] {
    let mut bytes = [0; 32];
    bytes[0] = n;
    bytes
}

/// 2^255 - 19 + `delta`, little-endian.
const fn p_plus(delta: i8) -> [u8; 32] {
    let mut bytes = [0xff; 32];
    bytes[0] = (0xed_i16 + delta as i16) as u8;
    bytes[31] = 0x7f;
    bytes
}

/// Whether `key` is one of [`SMALL_ORDER`]; X25519 ignores the top bit.
fn has_small_order(key: &[u8; 32]) -> bool {
    let mut masked = *key;
    masked[31] &= 0x7f;
    SMALL_ORDER.iter().any(|weak| same(weak, &masked))
}

/// The box between `peer` and `secret` (NaCl's `crypto_box_beforenm`). Refuses with
/// [`CurveError::WeakKey`] a peer key of small order, and any key whose shared secret
/// is all zero (as libsodium's `crypto_scalarmult` does).
pub(super) fn agree(peer: &[u8; 32], secret: &Secret) -> Result<SharedBox, CurveError> {
    if has_small_order(peer) {
        return Err(CurveError::WeakKey);
    }
    let shared = x25519(peer, secret)?;
    let key = box_key(&shared);
    Ok(Arc::new(super::secretbox::SecretBox::new(*key)))
}

/// X25519 (RFC 7748) of `peer` with the clamped, unreduced `secret`; an all-zero result
/// means the peer's point had no prime-order part, and is refused.
fn x25519(peer: &[u8; 32], secret: &Secret) -> Result<Zeroizing<[u8; 32]>, CurveError> {
    let shared = Zeroizing::new(MontgomeryPoint(*peer).mul_clamped(*secret.bytes).to_bytes());
    if same(&shared[..], &[0; 32]) {
        return Err(CurveError::WeakKey);
    }
    Ok(shared)
}

/// HSalsa20 of `shared` with 16 zero input bytes: the box key `crypto_box_beforenm` makes.
fn box_key(shared: &[u8; 32]) -> Zeroizing<[u8; 32]> {
    let mut block = hsalsa::<U10>(GenericArray::from_slice(shared), &GenericArray::default());
    let mut key = Zeroizing::new([0; 32]);
    key.copy_from_slice(&block);
    block.as_mut_slice().zeroize();
    key
}

#[cfg(test)]
mod tests {
    use super::super::crypto::BoxCipher;
    use super::super::crypto::{open, seal, TAG};
    use super::*;
    use crypto_box::{PublicKey, SalsaBox, SecretKey};
    use curve25519_dalek::constants::EIGHT_TORSION;

    fn hex(text: &str) -> [u8; 32] {
        let mut out = [0; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).expect("hex digits");
        }
        out
    }

    /// The tag of the empty message under the zero nonce: equal tags mean equal keys.
    fn fingerprint<C: BoxCipher + ?Sized>(cipher: &C) -> Vec<u8> {
        cipher.seal_detached(&[0; 24], &mut []).to_vec()
    }

    /// crypto_box's box between `peer` and `secret`: NaCl's for prime-order keys.
    fn salsa_box(peer: &[u8; 32], secret: &Secret) -> SalsaBox {
        SalsaBox::new(
            &PublicKey::from(*peer),
            &SecretKey::from(*secret.as_bytes()),
        )
    }

    #[test]
    fn rfc7748_x25519_vector() {
        // RFC 7748 section 5.2, first vector: a scalar that is not reduced mod ℓ.
        let secret = Secret::from_bytes(hex(
            "a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
        ));
        let u = hex("e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c");
        let expected = hex("c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552");
        assert_eq!(*x25519(&u, &secret).expect("not zero"), expected);
    }

    #[test]
    fn rfc7748_one_iteration_pins_the_public_key() {
        // RFC 7748 section 5.2: X25519(9, 9) after one iteration; our public key is
        // X25519(secret, 9), so with the secret 9 it is that same value.
        let nine = le_small(9);
        let expected = hex("422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079");
        let secret = Secret::from_bytes(nine);
        assert_eq!(*x25519(&nine, &secret).expect("not zero"), expected);
        assert_eq!(secret.public(), &expected);
    }

    #[test]
    fn rfc7748_diffie_hellman_then_nacl_beforenm_key() {
        // RFC 7748 section 6.1 (the keys of NaCl's box test), then the HSalsa20 key
        // NaCl's tests/core1.c derives from that shared secret ("firstkey").
        let alice = Secret::from_bytes(hex(
            "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
        ));
        let bob = Secret::from_bytes(hex(
            "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb",
        ));
        let alice_public = "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a";
        let bob_public = "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f";
        assert_eq!(alice.public(), &hex(alice_public));
        assert_eq!(bob.public(), &hex(bob_public));
        let shared = hex("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
        assert_eq!(*x25519(bob.public(), &alice).expect("not zero"), shared);
        assert_eq!(*x25519(alice.public(), &bob).expect("not zero"), shared);
        let first_key = hex("1b27556473e985d462cd51197a9a46c76009549eac6474f206c4ee0844f68389");
        assert_eq!(*box_key(&shared), first_key);
    }

    #[test]
    fn agreement_matches_crypto_box_for_honest_keys() {
        for round in 0..8u8 {
            let ours = Secret::generate();
            let theirs = Secret::generate();
            let crypto_box_public = SecretKey::from(*ours.as_bytes()).public_key();
            assert_eq!(ours.public(), crypto_box_public.as_bytes());

            let ours_box = agree(theirs.public(), &ours).expect("honest keys");
            let reference = salsa_box(theirs.public(), &ours);
            let nonce = [round; 24];
            let mut boxed = Vec::new();
            seal(&reference, &nonce, b"sealed by crypto_box", &mut boxed);
            let opened = open(&*ours_box, &nonce, &boxed).expect("our key opens it");
            assert_eq!(opened, b"sealed by crypto_box");
            boxed.clear();
            seal(&*ours_box, &nonce, b"sealed by us", &mut boxed);
            let opened = open(&reference, &nonce, &boxed).expect("crypto_box opens it");
            assert_eq!(opened, b"sealed by us");
            assert_eq!(boxed.len(), TAG + b"sealed by us".len());
        }
    }

    #[test]
    fn mixed_order_peer_key_gets_the_clamped_unreduced_scalar() {
        let honest = Secret::generate();
        let point = MontgomeryPoint(*honest.public())
            .to_edwards(0)
            .expect("a public key is a curve point");
        let mixed_point = point + EIGHT_TORSION[1];
        let mixed = mixed_point.to_montgomery().to_bytes();
        assert!(
            !has_small_order(&mixed),
            "not in the list, so it gets through"
        );
        assert_ne!(&mixed, honest.public());

        let mut crypto_box_leaks = false;
        for i in 1..=8u8 {
            let secret = Secret::from_bytes([i; 32]);
            let shared = x25519(&mixed, &secret).expect("not zero");
            // The same product by the clamped integer, on the Edwards form.
            let on_edwards = mixed_point.mul_clamped(*secret.as_bytes()).to_montgomery();
            assert_eq!(*shared, on_edwards.to_bytes());
            let direct = MontgomeryPoint(mixed).mul_clamped(*secret.as_bytes());
            assert_eq!(*shared, direct.to_bytes());
            // A multiple of 8 wipes out the torsion: as if the peer had sent `honest`.
            assert_eq!(shared, x25519(honest.public(), &secret).expect("not zero"));

            let ours = agree(&mixed, &secret).expect("mixed order is not refused");
            let honest_box = salsa_box(honest.public(), &secret);
            assert_eq!(fingerprint(&*ours), fingerprint(&honest_box));
            // crypto_box's reduced scalar keeps `(k mod ℓ) mod 8` times the torsion.
            let reduced = salsa_box(&mixed, &secret);
            crypto_box_leaks |= fingerprint(&reduced) != fingerprint(&honest_box);
        }
        assert!(crypto_box_leaks, "the reduced scalar sees the torsion");
    }

    #[test]
    fn all_zero_shared_secret_is_refused() {
        // Every listed key is killed by a clamped scalar, so the zero check alone would
        // refuse each of them.
        let secret = Secret::generate();
        for weak in SMALL_ORDER {
            assert!(
                matches!(x25519(&weak, &secret), Err(CurveError::WeakKey)),
                "{weak:02x?}"
            );
        }
        assert!(x25519(Secret::generate().public(), &secret).is_ok());
    }

    #[test]
    fn small_order_keys_are_refused() {
        assert_eq!(p_plus(-1)[0], 0xec);
        assert_eq!(p_plus(1)[0], 0xee);
        let secret = Secret::generate();
        for weak in SMALL_ORDER {
            let mut high = weak;
            high[31] |= 0x80;
            for key in [weak, high] {
                assert!(
                    matches!(agree(&key, &secret), Err(CurveError::WeakKey)),
                    "{key:02x?}"
                );
            }
        }
        assert!(agree(Secret::generate().public(), &secret).is_ok());
    }
}
