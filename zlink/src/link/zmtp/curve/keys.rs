//! Long-term CURVE keys, written as Z85 text the way libzmq and czmq write them.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use zeroize::Zeroize;

use super::x25519::Secret;

/// Characters in the Z85 text of a 32-byte key.
const Z85_KEY_LEN: usize = 40;

/// Why a CURVE key could not be read. Messages never contain secret key text.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The text is not Z85 (the 85-character alphabet of ZeroMQ RFC 32).
    #[error("the {what} is not valid Z85 text")]
    BadZ85 {
        /// Which key: `"public key"` or `"secret key"`.
        what: &'static str,
    },
    /// The text is not the 40 characters of a 32-byte key.
    #[error("the {what} must be {expected} Z85 characters, got {actual}")]
    WrongLength {
        /// Which key: `"public key"` or `"secret key"`.
        what: &'static str,
        /// The length a key has.
        expected: usize,
        /// The length given.
        actual: usize,
    },
    /// The secret key does not belong to the public key given with it.
    #[error("the secret key does not belong to the given public key")]
    Mismatch,
    /// A key file has no `secret-key` line.
    #[error("the key file has no secret-key")]
    MissingSecret,
    /// A public key file has no `public-key` line (nor a `secret-key` one).
    #[error("the key file has no public-key")]
    MissingPublic,
    /// A key file line could not be read.
    #[error("key file line {line}: {reason}")]
    Format {
        /// The line, counted from 1.
        line: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A key file could not be read.
    #[error("cannot read key file: {0}")]
    Io(String),
}

/// A long-term CURVE public key (32 bytes, X25519). Shown and parsed as 40 Z85 characters.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CurvePublicKey([u8; 32]);

impl CurvePublicKey {
    /// Parses the 40-character Z85 text of a key.
    pub fn from_z85(text: &str) -> Result<Self, KeyError> {
        decode_key(text, "public key").map(CurvePublicKey)
    }

    /// The key with these bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        CurvePublicKey(bytes)
    }

    /// The 40-character Z85 text of the key.
    pub fn to_z85(&self) -> String {
        z85::encode(self.0)
    }

    /// The key's bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Reads the public key of a key file: a public certificate (a `public-key` line, as
    /// [`write_file`](Self::write_file), czmq's `zcert_save_public` and pyzmq's
    /// `create_certificates` write it), or a secret key file, whose public half it takes.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, KeyError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| KeyError::Io(format!("{}: {e}", path.display())))?;
        super::keyfile::parse_public(&text)
    }

    /// Writes the key as a public certificate, the file to hand to the nodes that are to
    /// trust or dial this one.
    pub fn write_file(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        std::fs::write(path, super::keyfile::render_public(self))
    }
}

impl fmt::Display for CurvePublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_z85())
    }
}

impl fmt::Debug for CurvePublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CurvePublicKey({})", self.to_z85())
    }
}

impl FromStr for CurvePublicKey {
    type Err = KeyError;

    fn from_str(text: &str) -> Result<Self, KeyError> {
        CurvePublicKey::from_z85(text)
    }
}

/// A long-term CURVE keypair. Its `Debug` output shows only the public key, and the
/// secret is wiped from memory when the keypair is dropped.
#[derive(Clone)]
pub struct CurveKeypair {
    public: CurvePublicKey,
    /// The 32 secret bytes themselves, multiplied as NaCl does (not crypto_box's
    /// `SecretKey`, whose key agreement uses the secret reduced mod ℓ; see
    /// [`super::x25519`]).
    secret: Secret,
}

impl CurveKeypair {
    /// A fresh random keypair.
    pub fn generate() -> Self {
        CurveKeypair::from_secret(Secret::generate())
    }

    /// A keypair from the Z85 text of both keys; fails with [`KeyError::Mismatch`] unless
    /// the secret key derives the public key.
    pub fn from_z85(public: &str, secret: &str) -> Result<Self, KeyError> {
        let public = CurvePublicKey::from_z85(public)?;
        let keypair = CurveKeypair::from_secret_z85(secret)?;
        if keypair.public == public {
            Ok(keypair)
        } else {
            Err(KeyError::Mismatch)
        }
    }

    /// A keypair from the Z85 text of the secret key alone.
    pub fn from_secret_z85(secret: &str) -> Result<Self, KeyError> {
        let bytes = decode_key(secret, "secret key")?;
        Ok(CurveKeypair::from_secret(Secret::from_bytes(bytes)))
    }

    /// Reads a key file: `secret-key = "<z85>"` and optionally `public-key = "<z85>"`
    /// lines, as czmq's `zcert_save_secret` and pyzmq's `create_certificates` write them
    /// (quotes optional, any order; comments, blank lines and other lines are skipped).
    /// A `public-key` line must match the secret key.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, KeyError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| KeyError::Io(format!("{}: {e}", path.display())))?;
        super::keyfile::parse(&text)
    }

    /// Writes the keypair in the format [`CurveKeypair::from_file`] reads (and czmq and
    /// pyzmq load), readable by the owner only on unix.
    pub fn write_file(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        super::keyfile::write(path.as_ref(), &super::keyfile::render(self))
    }

    /// The public half.
    pub fn public(&self) -> CurvePublicKey {
        self.public
    }

    /// The 40-character Z85 text of the secret key. Handle it as the secret it is.
    pub fn secret_z85(&self) -> String {
        z85::encode(self.secret.as_bytes())
    }

    pub(super) fn secret(&self) -> &Secret {
        &self.secret
    }

    fn from_secret(secret: Secret) -> Self {
        let public = CurvePublicKey(*secret.public());
        CurveKeypair { public, secret }
    }
}

impl fmt::Debug for CurveKeypair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CurveKeypair")
            .field("public", &self.public)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// The 32 bytes of a 40-character Z85 key text.
fn decode_key(text: &str, what: &'static str) -> Result<[u8; 32], KeyError> {
    if !text.is_ascii() {
        return Err(KeyError::BadZ85 { what });
    }
    if text.len() != Z85_KEY_LEN {
        return Err(KeyError::WrongLength {
            what,
            expected: Z85_KEY_LEN,
            actual: text.len(),
        });
    }
    // The z85 crate reads a chunk led by '#' as padding and returns fewer bytes; a real
    // key never starts a chunk with '#' (that digit would overflow 32 bits), so such text
    // is refused by the length check.
    let mut bytes = z85::decode(text).map_err(|_| KeyError::BadZ85 { what })?;
    let key = <[u8; 32]>::try_from(&bytes[..]).map_err(|_| KeyError::BadZ85 { what });
    // This may be a secret key: wipe the decoder's copy.
    bytes.zeroize();
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    // The test keys of libzmq's zmq_curve(7), in hex and in Z85.
    const CLIENT_PUBLIC_HEX: &str =
        "BB88471D65E2659B30C55A5321CEBB5AAB2B70A398645C26DCA2B2FCB43FC518";
    const CLIENT_PUBLIC: &str = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID";
    const CLIENT_SECRET: &str = "D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs";
    const CLIENT_SECRET_HEX: &str =
        "7BB864B489AFA3671FBE69101F94B38972F24816DFB01B51656B3FEC8DFD0888";
    const SERVER_PUBLIC: &str = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
    const SERVER_PUBLIC_HEX: &str =
        "54FCBA24E93249969316FB617C872BB0C1D1FF14800427C594CBFACF1BC2D652";
    const SERVER_SECRET: &str = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6";

    fn hex(text: &str) -> [u8; 32] {
        let mut out = [0; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).expect("hex digits");
        }
        out
    }

    #[test]
    fn rfc32_z85_vector() {
        let bytes = [0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B];
        assert_eq!(z85::encode(bytes), "HelloWorld");
        assert_eq!(z85::decode("HelloWorld").expect("valid Z85"), bytes);
    }

    #[test]
    fn libzmq_test_keys_decode_and_derive() {
        let client = CurvePublicKey::from_z85(CLIENT_PUBLIC).expect("client public");
        assert_eq!(client.as_bytes(), &hex(CLIENT_PUBLIC_HEX));
        let server = CurvePublicKey::from_z85(SERVER_PUBLIC).expect("server public");
        assert_eq!(server.as_bytes(), &hex(SERVER_PUBLIC_HEX));

        let pair = CurveKeypair::from_z85(CLIENT_PUBLIC, CLIENT_SECRET).expect("client pair");
        assert_eq!(pair.public(), client);
        assert_eq!(pair.secret_z85(), CLIENT_SECRET);
        assert_eq!(pair.secret().as_bytes(), &hex(CLIENT_SECRET_HEX));
        let pair = CurveKeypair::from_secret_z85(SERVER_SECRET).expect("server secret");
        assert_eq!(pair.public(), server);
    }

    #[test]
    fn z85_round_trip() {
        let pair = CurveKeypair::generate();
        let text = pair.public().to_z85();
        assert_eq!(text.len(), 40);
        assert_eq!(
            CurvePublicKey::from_z85(&text).expect("own text"),
            pair.public()
        );
        assert_eq!(
            text.parse::<CurvePublicKey>().expect("FromStr"),
            pair.public()
        );
        assert_eq!(pair.public().to_string(), text);
        let again = CurveKeypair::from_z85(&text, &pair.secret_z85()).expect("own pair");
        assert_eq!(again.public(), pair.public());
    }

    #[test]
    fn mismatched_pair_is_refused() {
        let a = CurveKeypair::generate();
        let b = CurveKeypair::generate();
        let err = CurveKeypair::from_z85(&a.public().to_z85(), &b.secret_z85())
            .expect_err("keys of two pairs");
        assert!(matches!(err, KeyError::Mismatch), "{err}");
    }

    #[test]
    fn bad_text_is_refused() {
        let good = CLIENT_PUBLIC;
        assert!(matches!(
            CurvePublicKey::from_z85(&good[..39]),
            Err(KeyError::WrongLength {
                expected: 40,
                actual: 39,
                ..
            })
        ));
        assert!(matches!(
            CurvePublicKey::from_z85(&format!("{good}0")),
            Err(KeyError::WrongLength { .. })
        ));
        let spaced = format!(" {}", &good[1..]);
        assert!(matches!(
            CurvePublicKey::from_z85(&spaced),
            Err(KeyError::BadZ85 { .. })
        ));
        let padded = format!("{}#0000", &good[..35]);
        assert!(matches!(
            CurvePublicKey::from_z85(&padded),
            Err(KeyError::BadZ85 { .. })
        ));
        // Five '%' (digit 82 each) overflow 32 bits.
        let overflow = format!("{}%%%%%", &good[..35]);
        assert!(matches!(
            CurvePublicKey::from_z85(&overflow),
            Err(KeyError::BadZ85 { .. })
        ));
        let accented = format!("é{}", &good[2..]);
        assert!(matches!(
            CurvePublicKey::from_z85(&accented),
            Err(KeyError::BadZ85 { .. })
        ));
    }

    #[test]
    fn errors_and_debug_never_show_the_secret() {
        let pair = CurveKeypair::generate();
        let secret = pair.secret_z85();
        let shown = format!("{pair:?}");
        assert!(!shown.contains(&secret), "{shown}");
        assert!(shown.contains(&pair.public().to_z85()), "{shown}");

        let mut bad = secret.clone();
        bad.replace_range(39..40, " ");
        let err = CurveKeypair::from_secret_z85(&bad).expect_err("space is not Z85");
        assert!(!err.to_string().contains(&secret[..39]), "{err}");
        assert!(!format!("{err:?}").contains(&secret[..39]), "{err:?}");
    }

    #[test]
    fn public_key_debug_is_z85() {
        let key = CurvePublicKey::from_z85(SERVER_PUBLIC).expect("valid");
        assert_eq!(
            format!("{key:?}"),
            format!("CurvePublicKey({SERVER_PUBLIC})")
        );
    }
}
