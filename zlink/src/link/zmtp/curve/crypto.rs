//! NaCl boxes as CurveZMQ lays them out: the 16-byte Poly1305 tag, then the ciphertext
//! (`crypto_box` output without its 16 leading zero bytes). RustCrypto's XSalsa20Poly1305
//! puts the tag first too; the NaCl test vector below pins it.

use std::sync::Arc;

use super::nonce::Nonce;
use super::secretbox::SecretBox;

/// Bytes a box adds to its plaintext.
pub(super) const TAG: usize = 16;

/// A precomputed public-key box (the XSalsa20Poly1305 key `crypto_box_beforenm` derives,
/// see [`super::x25519::agree`]), shared by the halves of a session.
pub(super) type SharedBox = Arc<SecretBox>;

/// A secretbox: what [`seal`] and [`open`] run on (ours, or in tests a reference one).
pub(super) trait BoxCipher {
    /// Encrypts `body` in place under `nonce`; returns its tag.
    fn seal_detached(&self, nonce: &Nonce, body: &mut [u8]) -> [u8; TAG];
    /// Decrypts `body` in place when `tag` authenticates it; `false`, `body` untouched,
    /// when it does not.
    fn open_detached(&self, nonce: &Nonce, body: &mut [u8], tag: &[u8; TAG]) -> bool;
}

/// Appends the box of `plaintext` to `out`.
pub(super) fn seal<C>(cipher: &C, nonce: &Nonce, plaintext: &[u8], out: &mut Vec<u8>)
where
    C: BoxCipher + ?Sized,
{
    let start = out.len();
    out.reserve(TAG + plaintext.len());
    out.extend_from_slice(&[0; TAG]);
    out.extend_from_slice(plaintext);
    seal_tail(cipher, nonce, out, start);
}

/// Boxes in place what follows `out[start..start + TAG]`, writing the tag there.
pub(super) fn seal_tail<C>(cipher: &C, nonce: &Nonce, out: &mut [u8], start: usize)
where
    C: BoxCipher + ?Sized,
{
    let Some(boxed) = out.get_mut(start..) else {
        return;
    };
    if boxed.len() < TAG {
        return;
    }
    let (tag, body) = boxed.split_at_mut(TAG);
    tag.copy_from_slice(&cipher.seal_detached(nonce, body));
}

/// The plaintext of `boxed` (tag then ciphertext), or `None` if it does not open.
pub(super) fn open<C>(cipher: &C, nonce: &Nonce, boxed: &[u8]) -> Option<Vec<u8>>
where
    C: BoxCipher + ?Sized,
{
    let (tag, ciphertext) = boxed.split_at_checked(TAG)?;
    let tag: [u8; TAG] = tag.try_into().ok()?;
    let mut plaintext = ciphertext.to_vec();
    cipher
        .open_detached(nonce, &mut plaintext, &tag)
        .then_some(plaintext)
}

/// RustCrypto's boxes (`crypto_box`, `crypto_secretbox`), the references ours are
/// checked against.
#[cfg(test)]
impl<A> BoxCipher for A
where
    A: crypto_box::aead::AeadInPlace<
        NonceSize = crypto_box::aead::consts::U24,
        TagSize = crypto_box::aead::consts::U16,
    >,
{
    fn seal_detached(&self, nonce: &Nonce, body: &mut [u8]) -> [u8; TAG] {
        self.encrypt_in_place_detached(&(*nonce).into(), b"", body)
            .map(Into::into)
            .unwrap_or([0; TAG])
    }

    fn open_detached(&self, nonce: &Nonce, body: &mut [u8], tag: &[u8; TAG]) -> bool {
        self.decrypt_in_place_detached(&(*nonce).into(), b"", body, &(*tag).into())
            .is_ok()
    }
}

/// The `N` bytes at `at` in `bytes`, if they are all there.
pub(super) fn field<const N: usize>(bytes: &[u8], at: usize) -> Option<&[u8; N]> {
    bytes.get(at..at.checked_add(N)?)?.try_into().ok()
}

/// Compares without stopping at the first difference.
pub(super) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::super::x25519::{agree, Secret};
    use super::*;

    // The classic test vector of NaCl's tests/box.c (also in libsodium's test suite).
    const ALICE_SECRET: [u8; 32] = [
        0x77, 0x07, 0x6d, 0x0a, 0x73, 0x18, 0xa5, 0x7d, 0x3c, 0x16, 0xc1, 0x72, 0x51, 0xb2, 0x66,
        0x45, 0xdf, 0x4c, 0x2f, 0x87, 0xeb, 0xc0, 0x99, 0x2a, 0xb1, 0x77, 0xfb, 0xa5, 0x1d, 0xb9,
        0x2c, 0x2a,
    ];
    const ALICE_PUBLIC: [u8; 32] = [
        0x85, 0x20, 0xf0, 0x09, 0x89, 0x30, 0xa7, 0x54, 0x74, 0x8b, 0x7d, 0xdc, 0xb4, 0x3e, 0xf7,
        0x5a, 0x0d, 0xbf, 0x3a, 0x0d, 0x26, 0x38, 0x1a, 0xf4, 0xeb, 0xa4, 0xa9, 0x8e, 0xaa, 0x9b,
        0x4e, 0x6a,
    ];
    const BOB_SECRET: [u8; 32] = [
        0x5d, 0xab, 0x08, 0x7e, 0x62, 0x4a, 0x8a, 0x4b, 0x79, 0xe1, 0x7f, 0x8b, 0x83, 0x80, 0x0e,
        0xe6, 0x6f, 0x3b, 0xb1, 0x29, 0x26, 0x18, 0xb6, 0xfd, 0x1c, 0x2f, 0x8b, 0x27, 0xff, 0x88,
        0xe0, 0xeb,
    ];
    const BOB_PUBLIC: [u8; 32] = [
        0xde, 0x9e, 0xdb, 0x7d, 0x7b, 0x7d, 0xc1, 0xb4, 0xd3, 0x5b, 0x61, 0xc2, 0xec, 0xe4, 0x35,
        0x37, 0x3f, 0x83, 0x43, 0xc8, 0x5b, 0x78, 0x67, 0x4d, 0xad, 0xfc, 0x7e, 0x14, 0x6f, 0x88,
        0x2b, 0x4f,
    ];
    const NONCE: [u8; 24] = [
        0x69, 0x69, 0x6e, 0xe9, 0x55, 0xb6, 0x2b, 0x73, 0xcd, 0x62, 0xbd, 0xa8, 0x75, 0xfc, 0x73,
        0xd6, 0x82, 0x19, 0xe0, 0x03, 0x6b, 0x7a, 0x0b, 0x37,
    ];
    const MESSAGE: [u8; 131] = [
        0xbe, 0x07, 0x5f, 0xc5, 0x3c, 0x81, 0xf2, 0xd5, 0xcf, 0x14, 0x13, 0x16, 0xeb, 0xeb, 0x0c,
        0x7b, 0x52, 0x28, 0xc5, 0x2a, 0x4c, 0x62, 0xcb, 0xd4, 0x4b, 0x66, 0x84, 0x9b, 0x64, 0x24,
        0x4f, 0xfc, 0xe5, 0xec, 0xba, 0xaf, 0x33, 0xbd, 0x75, 0x1a, 0x1a, 0xc7, 0x28, 0xd4, 0x5e,
        0x6c, 0x61, 0x29, 0x6c, 0xdc, 0x3c, 0x01, 0x23, 0x35, 0x61, 0xf4, 0x1d, 0xb6, 0x6c, 0xce,
        0x31, 0x4a, 0xdb, 0x31, 0x0e, 0x3b, 0xe8, 0x25, 0x0c, 0x46, 0xf0, 0x6d, 0xce, 0xea, 0x3a,
        0x7f, 0xa1, 0x34, 0x80, 0x57, 0xe2, 0xf6, 0x55, 0x6a, 0xd6, 0xb1, 0x31, 0x8a, 0x02, 0x4a,
        0x83, 0x8f, 0x21, 0xaf, 0x1f, 0xde, 0x04, 0x89, 0x77, 0xeb, 0x48, 0xf5, 0x9f, 0xfd, 0x49,
        0x24, 0xca, 0x1c, 0x60, 0x90, 0x2e, 0x52, 0xf0, 0xa0, 0x89, 0xbc, 0x76, 0x89, 0x70, 0x40,
        0xe0, 0x82, 0xf9, 0x37, 0x76, 0x38, 0x48, 0x64, 0x5e, 0x07, 0x05,
    ];
    // crypto_box output from byte 16 on: the tag (first 16 bytes), then the ciphertext.
    const BOXED: [u8; 147] = [
        0xf3, 0xff, 0xc7, 0x70, 0x3f, 0x94, 0x00, 0xe5, 0x2a, 0x7d, 0xfb, 0x4b, 0x3d, 0x33, 0x05,
        0xd9, 0x8e, 0x99, 0x3b, 0x9f, 0x48, 0x68, 0x12, 0x73, 0xc2, 0x96, 0x50, 0xba, 0x32, 0xfc,
        0x76, 0xce, 0x48, 0x33, 0x2e, 0xa7, 0x16, 0x4d, 0x96, 0xa4, 0x47, 0x6f, 0xb8, 0xc5, 0x31,
        0xa1, 0x18, 0x6a, 0xc0, 0xdf, 0xc1, 0x7c, 0x98, 0xdc, 0xe8, 0x7b, 0x4d, 0xa7, 0xf0, 0x11,
        0xec, 0x48, 0xc9, 0x72, 0x71, 0xd2, 0xc2, 0x0f, 0x9b, 0x92, 0x8f, 0xe2, 0x27, 0x0d, 0x6f,
        0xb8, 0x63, 0xd5, 0x17, 0x38, 0xb4, 0x8e, 0xee, 0xe3, 0x14, 0xa7, 0xcc, 0x8a, 0xb9, 0x32,
        0x16, 0x45, 0x48, 0xe5, 0x26, 0xae, 0x90, 0x22, 0x43, 0x68, 0x51, 0x7a, 0xcf, 0xea, 0xbd,
        0x6b, 0xb3, 0x73, 0x2b, 0xc0, 0xe9, 0xda, 0x99, 0x83, 0x2b, 0x61, 0xca, 0x01, 0xb6, 0xde,
        0x56, 0x24, 0x4a, 0x9e, 0x88, 0xd5, 0xf9, 0xb3, 0x79, 0x73, 0xf6, 0x22, 0xa4, 0x3d, 0x14,
        0xa6, 0x59, 0x9b, 0x1f, 0x65, 0x4c, 0xb4, 0x5a, 0x74, 0xe3, 0x55, 0xa5,
    ];

    #[test]
    fn nacl_box_vector_has_the_tag_first() {
        let alice = Secret::from_bytes(ALICE_SECRET);
        let bob = Secret::from_bytes(BOB_SECRET);
        assert_eq!(alice.public(), &ALICE_PUBLIC);
        assert_eq!(bob.public(), &BOB_PUBLIC);

        let to_bob = agree(&BOB_PUBLIC, &alice).expect("honest keys");
        let mut out = b"head".to_vec();
        seal(&*to_bob, &NONCE, &MESSAGE, &mut out);
        assert_eq!(&out[..4], b"head");
        assert_eq!(&out[4..], &BOXED[..]);

        let from_alice = agree(&ALICE_PUBLIC, &bob).expect("honest keys");
        let opened = open(&*from_alice, &NONCE, &BOXED).expect("vector opens");
        assert_eq!(opened, MESSAGE);
    }

    #[test]
    fn any_flipped_bit_stops_the_box_from_opening() {
        let a = Secret::generate();
        let b = Secret::generate();
        let ab = agree(b.public(), &a).expect("honest keys");
        let ba = agree(a.public(), &b).expect("honest keys");
        let nonce = [3; 24];
        let mut boxed = Vec::new();
        seal(&*ab, &nonce, b"attack at dawn", &mut boxed);
        assert_eq!(
            open(&*ba, &nonce, &boxed).as_deref(),
            Some(&b"attack at dawn"[..])
        );
        for i in 0..boxed.len() {
            let mut altered = boxed.clone();
            altered[i] ^= 0x10;
            assert!(open(&*ba, &nonce, &altered).is_none(), "byte {i}");
        }
        assert!(open(&*ba, &[4; 24], &boxed).is_none());
        assert!(open(&*ba, &nonce, &boxed[..TAG - 1]).is_none());
    }

    #[test]
    fn empty_plaintext_boxes_to_a_bare_tag() {
        let a = Secret::generate();
        let aa = agree(a.public(), &a).expect("honest key");
        let mut boxed = Vec::new();
        seal(&*aa, &[0; 24], b"", &mut boxed);
        assert_eq!(boxed.len(), TAG);
        assert_eq!(open(&*aa, &[0; 24], &boxed), Some(Vec::new()));
    }

    #[test]
    fn fields_are_bounds_checked() {
        let bytes = [1, 2, 3, 4];
        assert_eq!(field::<2>(&bytes, 2), Some(&[3, 4]));
        assert_eq!(field::<2>(&bytes, 3), None);
        assert_eq!(field::<2>(&bytes, usize::MAX), None);
    }

    #[test]
    fn same_compares_whole_slices() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"ab"));
    }
}
