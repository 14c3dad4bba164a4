//! NaCl's secretbox (XSalsa20 and Poly1305), the box of every CurveZMQ command and
//! message, with the one saving a CURVE session allows: its message nonces share their
//! first 16 bytes, so the XSalsa20 subkey they derive is computed once per direction
//! ([`PrefixKey`]) instead of once per frame.
//!
//! XSalsa20 is `salsa20`'s; Poly1305 is [`super::poly1305`] (see there why). The box is
//! byte-for-byte `crypto_secretbox`'s: the NaCl vector in [`super::crypto`] and the
//! property tests against that crate pin it.

use salsa20::cipher::consts::U10;
use salsa20::cipher::generic_array::GenericArray;
use salsa20::cipher::{KeyIvInit, StreamCipher};
use salsa20::{hsalsa, Salsa20};
use zeroize::Zeroizing;

use super::crypto::{same, BoxCipher, TAG};
use super::nonce::Nonce;
use super::poly1305;

/// A secretbox key (for a session, the key `crypto_box_beforenm` derives).
pub(crate) struct SecretBox {
    key: Zeroizing<[u8; 32]>,
}

impl SecretBox {
    pub(super) fn new(key: [u8; 32]) -> Self {
        SecretBox {
            key: Zeroizing::new(key),
        }
    }

    /// A box under a fresh random key.
    pub(super) fn generate() -> Self {
        let mut key = Zeroizing::new([0u8; 32]);
        super::nonce::fill_random(&mut key[..]);
        SecretBox { key }
    }

    /// The key for every nonce that starts with `prefix`: only the last 8 bytes differ.
    pub(super) fn for_prefix(&self, prefix: &[u8; 16]) -> PrefixKey {
        PrefixKey {
            subkey: subkey(&self.key, prefix),
        }
    }
}

/// The XSalsa20 subkey of one 16-byte nonce prefix: boxes under nonces `prefix ‖ n`.
pub(super) struct PrefixKey {
    subkey: Zeroizing<[u8; 32]>,
}

impl PrefixKey {
    /// Encrypts `body` in place under the nonce `prefix ‖ tail`; returns its tag.
    pub(super) fn seal(&self, tail: &[u8; 8], body: &mut [u8]) -> [u8; TAG] {
        seal_under(&self.subkey, tail, body)
    }

    /// Decrypts `body` in place when `tag` authenticates it; `false` (and `body`
    /// untouched) when it does not.
    pub(super) fn open(&self, tail: &[u8; 8], body: &mut [u8], tag: &[u8; TAG]) -> bool {
        open_under(&self.subkey, tail, body, tag)
    }
}

/// HSalsa20 of `key` with `prefix`: the subkey XSalsa20 runs Salsa20 under.
fn subkey(key: &[u8; 32], prefix: &[u8; 16]) -> Zeroizing<[u8; 32]> {
    let mut derived = hsalsa::<U10>(
        GenericArray::from_slice(key),
        GenericArray::from_slice(prefix),
    );
    let mut out = Zeroizing::new([0u8; 32]);
    out.copy_from_slice(&derived);
    zeroize::Zeroize::zeroize(derived.as_mut_slice());
    out
}

/// The Salsa20 stream under `subkey` and `tail`, and the Poly1305 key its first 32 bytes
/// are; the stream goes on from byte 32.
fn stream(subkey: &[u8; 32], tail: &[u8; 8]) -> (Salsa20, Zeroizing<[u8; 32]>) {
    let mut cipher = Salsa20::new(
        GenericArray::from_slice(subkey),
        GenericArray::from_slice(tail),
    );
    let mut mac_key = Zeroizing::new([0u8; 32]);
    cipher.apply_keystream(&mut mac_key[..]);
    (cipher, mac_key)
}

fn seal_under(subkey: &[u8; 32], tail: &[u8; 8], body: &mut [u8]) -> [u8; TAG] {
    let (mut cipher, mac_key) = stream(subkey, tail);
    cipher.apply_keystream(body);
    poly1305::tag(&mac_key, body)
}

fn open_under(subkey: &[u8; 32], tail: &[u8; 8], body: &mut [u8], tag: &[u8; TAG]) -> bool {
    let (mut cipher, mac_key) = stream(subkey, tail);
    if !same(&poly1305::tag(&mac_key, body), tag) {
        return false;
    }
    cipher.apply_keystream(body);
    true
}

/// Splits a 24-byte nonce into its HSalsa20 prefix and Salsa20 tail.
fn split(nonce: &Nonce) -> (&[u8; 16], &[u8; 8]) {
    let (prefix, tail) = nonce.split_at(16);
    // Both lengths are fixed by the nonce's type.
    (
        prefix.try_into().unwrap_or(&[0; 16]),
        tail.try_into().unwrap_or(&[0; 8]),
    )
}

impl BoxCipher for SecretBox {
    fn seal_detached(&self, nonce: &Nonce, body: &mut [u8]) -> [u8; TAG] {
        let (prefix, tail) = split(nonce);
        seal_under(&subkey(&self.key, prefix), tail, body)
    }

    fn open_detached(&self, nonce: &Nonce, body: &mut [u8], tag: &[u8; TAG]) -> bool {
        let (prefix, tail) = split(nonce);
        open_under(&subkey(&self.key, prefix), tail, body, tag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crypto_box::aead::{AeadInPlace, KeyInit};
    use crypto_secretbox::XSalsa20Poly1305;
    use proptest::prelude::*;

    fn reference(key: &[u8; 32]) -> XSalsa20Poly1305 {
        XSalsa20Poly1305::new(GenericArray::from_slice(key))
    }

    proptest! {
        #[test]
        fn boxes_exactly_as_crypto_secretbox_does(
            key in any::<[u8; 32]>(),
            nonce in any::<[u8; 24]>(),
            message in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let mut ours = message.clone();
            let our_tag = SecretBox::new(key).seal_detached(&nonce, &mut ours);
            let mut theirs = message.clone();
            let their_tag = reference(&key)
                .encrypt_in_place_detached(&nonce.into(), b"", &mut theirs)
                .expect("no associated data");
            prop_assert_eq!(&ours, &theirs);
            prop_assert_eq!(our_tag, <[u8; TAG]>::from(their_tag));

            let prefix: [u8; 16] = nonce[..16].try_into().expect("16 bytes");
            let tail: [u8; 8] = nonce[16..].try_into().expect("8 bytes");
            let mut opened = theirs.clone();
            prop_assert!(SecretBox::new(key).for_prefix(&prefix).open(&tail, &mut opened, &our_tag));
            prop_assert_eq!(&opened, &message);
            let mut whole = theirs.clone();
            prop_assert!(SecretBox::new(key).open_detached(&nonce, &mut whole, &our_tag));
            prop_assert_eq!(&whole, &message);
        }

        #[test]
        fn a_prefix_key_boxes_as_the_whole_nonce_does(
            key in any::<[u8; 32]>(),
            prefix in any::<[u8; 16]>(),
            counter in any::<u64>(),
            message in proptest::collection::vec(any::<u8>(), 0..200),
        ) {
            let tail = counter.to_be_bytes();
            let mut ours = message.clone();
            let tag = SecretBox::new(key).for_prefix(&prefix).seal(&tail, &mut ours);
            let mut nonce = [0u8; 24];
            nonce[..16].copy_from_slice(&prefix);
            nonce[16..].copy_from_slice(&tail);
            let mut theirs = message.clone();
            let their_tag = SecretBox::new(key).seal_detached(&nonce, &mut theirs);
            prop_assert_eq!(ours, theirs);
            prop_assert_eq!(tag, their_tag);
        }
    }

    #[test]
    fn a_box_that_does_not_authenticate_is_left_as_it_was() {
        let key = SecretBox::new([7; 32]).for_prefix(b"CurveZMQMESSAGEC");
        let mut body = b"attack at dawn".to_vec();
        let mut tag = key.seal(&[0, 0, 0, 0, 0, 0, 0, 3], &mut body);
        tag[0] ^= 1;
        let sealed = body.clone();
        assert!(!key.open(&[0, 0, 0, 0, 0, 0, 0, 3], &mut body, &tag));
        assert_eq!(body, sealed);
    }
}
