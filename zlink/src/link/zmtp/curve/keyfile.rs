//! Key files in the shape czmq (`zcert`) and pyzmq write secret certificates:
//!
//! ```text
//! #   ZeroMQ CURVE **Secret** Certificate
//! metadata
//! curve
//!     public-key = "<40 Z85 characters>"
//!     secret-key = "<40 Z85 characters>"
//! ```

use std::io::Write;
use std::path::Path;

use super::keys::{CurveKeypair, CurvePublicKey, KeyError};

/// The keypair in a key file's text.
pub(super) fn parse(text: &str) -> Result<CurveKeypair, KeyError> {
    let (public, secret) = fields(text)?;
    let keypair = CurveKeypair::from_secret_z85(secret.ok_or(KeyError::MissingSecret)?)?;
    if let Some(public) = public {
        if CurvePublicKey::from_z85(public)? != keypair.public() {
            return Err(KeyError::Mismatch);
        }
    }
    Ok(keypair)
}

/// The public key in a key file's text: a public certificate (`public-key` alone), or a
/// secret one, whose secret key then decides (and a `public-key` line must match it).
pub(super) fn parse_public(text: &str) -> Result<CurvePublicKey, KeyError> {
    match fields(text)? {
        (_, Some(_)) => parse(text).map(|keypair| keypair.public()),
        (Some(public), None) => CurvePublicKey::from_z85(public),
        (None, None) => Err(KeyError::MissingPublic),
    }
}

/// The `public-key` and `secret-key` values of a key file, unquoted.
fn fields(text: &str) -> Result<(Option<&str>, Option<&str>), KeyError> {
    let mut public = None;
    let mut secret = None;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        // Section names ("metadata", "curve") and other properties are not ours to read.
        let Some((name, value)) = trimmed.split_once('=') else {
            continue;
        };
        let slot = match name.trim() {
            "public-key" => &mut public,
            "secret-key" => &mut secret,
            _ => continue,
        };
        if slot.is_some() {
            return Err(KeyError::Format {
                line,
                reason: "the key appears twice",
            });
        }
        *slot = Some(unquote(value.trim()).map_err(|reason| KeyError::Format { line, reason })?);
    }
    Ok((public, secret))
}

/// A value, without the quotes it may have; a `#` comment may follow.
fn unquote(value: &str) -> Result<&str, &'static str> {
    let (inner, rest) = match value.chars().next() {
        Some(quote @ ('"' | '\'')) => {
            let body = &value[1..];
            let end = body.find(quote).ok_or("the closing quote is missing")?;
            (&body[..end], &body[end + 1..])
        }
        _ => match value.find(char::is_whitespace) {
            Some(end) => (&value[..end], &value[end..]),
            None => (value, ""),
        },
    };
    let rest = rest.trim_start();
    if rest.is_empty() || rest.starts_with('#') {
        Ok(inner)
    } else {
        Err("unexpected text after the value")
    }
}

/// The text of a key file holding `keypair`.
pub(super) fn render(keypair: &CurveKeypair) -> String {
    format!(
        "#   ZeroMQ CURVE **Secret** Certificate\n\
         #   DO NOT PROVIDE THIS FILE TO OTHER USERS nor change its permissions.\n\
         \n\
         metadata\n\
         curve\n    \
         public-key = \"{}\"\n    \
         secret-key = \"{}\"\n",
        keypair.public().to_z85(),
        keypair.secret_z85()
    )
}

/// The text of a public key file holding `key` (czmq's public certificate shape).
pub(super) fn render_public(key: &CurvePublicKey) -> String {
    format!(
        "#   ZeroMQ CURVE Public Certificate\n\
         #   Exchange securely, or use a secure mechanism to verify the contents\n\
         #   of this file after exchange. Store public certificates in your home\n\
         #   directory, in the .curve subdirectory.\n\
         \n\
         metadata\n\
         curve\n    \
         public-key = \"{}\"\n",
        key.to_z85()
    )
}

/// Writes `contents` to `path`, readable and writable by the owner only on unix.
pub(super) fn write(path: &Path, contents: &str) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        let file = options.open(path)?;
        // The mode above applies only to a new file; tighten an existing one before the
        // secret goes in.
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        write_all(file, contents)
    }
    #[cfg(not(unix))]
    {
        write_all(options.open(path)?, contents)
    }
}

fn write_all(mut file: std::fs::File, contents: &str) -> std::io::Result<()> {
    file.write_all(contents.as_bytes())?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PUBLIC: &str = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID";
    const SECRET: &str = "D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs";

    fn temp_path(name: &str) -> std::path::PathBuf {
        let unique: u64 = rand::random();
        std::env::temp_dir().join(format!("zlink-curve-{name}-{unique:016x}.key"))
    }

    #[test]
    fn file_round_trip() {
        let pair = CurveKeypair::generate();
        let path = temp_path("round-trip");
        pair.write_file(&path).expect("write key file");
        let back = CurveKeypair::from_file(&path).expect("read key file");
        assert_eq!(back.public(), pair.public());
        assert_eq!(back.secret_z85(), pair.secret_z85());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path)
                .expect("metadata")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::remove_file(&path).expect("remove key file");
    }

    #[cfg(unix)]
    #[test]
    fn rewriting_an_existing_file_tightens_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let path = temp_path("rewrite");
        std::fs::write(&path, "old").expect("write old file");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))
            .expect("loosen mode");
        let pair = CurveKeypair::generate();
        pair.write_file(&path).expect("rewrite key file");
        let mode = std::fs::metadata(&path)
            .expect("metadata")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let back = CurveKeypair::from_file(&path).expect("read key file");
        assert_eq!(back.public(), pair.public());
        std::fs::remove_file(&path).expect("remove key file");
    }

    #[test]
    fn reads_the_czmq_shape() {
        let text = format!(
            "#   ****  Generated on 2024-01-01 by CZMQ  ****\n\
             #   ZeroMQ CURVE **Secret** Certificate\n\n\
             metadata\n    name = \"node-1\"\ncurve\n    \
             public-key = \"{PUBLIC}\"\n    secret-key = \"{SECRET}\"\n"
        );
        assert_eq!(parse(&text).expect("czmq file").public().to_z85(), PUBLIC);
    }

    #[test]
    fn quotes_are_optional_and_order_is_free() {
        let text = format!("secret-key = {SECRET}\r\npublic-key='{PUBLIC}'  # mine\n");
        assert_eq!(
            parse(&text)
                .expect("bare and single-quoted")
                .public()
                .to_z85(),
            PUBLIC
        );
        let alone = format!("secret-key=\"{SECRET}\"");
        assert_eq!(
            parse(&alone).expect("secret alone").public().to_z85(),
            PUBLIC
        );
    }

    #[test]
    fn a_z85_hash_inside_quotes_is_not_a_comment() {
        let pair = (0..1000)
            .map(|_| CurveKeypair::generate())
            .find(|pair| pair.secret_z85().contains('#'))
            .expect("some secret holds a '#' within 1000 tries");
        let back = parse(&render(&pair)).expect("rendered file");
        assert_eq!(back.secret_z85(), pair.secret_z85());
    }

    #[test]
    fn public_key_must_match() {
        let other = CurveKeypair::generate().public().to_z85();
        let text = format!("public-key = \"{other}\"\nsecret-key = \"{SECRET}\"\n");
        assert!(matches!(parse(&text), Err(KeyError::Mismatch)));
    }

    #[test]
    fn malformed_files_are_refused() {
        let missing = format!("public-key = \"{PUBLIC}\"\n");
        assert!(matches!(parse(&missing), Err(KeyError::MissingSecret)));
        assert!(matches!(parse(""), Err(KeyError::MissingSecret)));
        let twice = format!("secret-key = \"{SECRET}\"\nsecret-key = \"{SECRET}\"\n");
        assert!(matches!(
            parse(&twice),
            Err(KeyError::Format { line: 2, .. })
        ));
        let open = format!("secret-key = \"{SECRET}\n");
        assert!(matches!(
            parse(&open),
            Err(KeyError::Format { line: 1, .. })
        ));
        let trailing = format!("secret-key = \"{SECRET}\" extra\n");
        assert!(matches!(parse(&trailing), Err(KeyError::Format { .. })));
        let short = "secret-key = \"abc\"\n";
        assert!(matches!(parse(short), Err(KeyError::WrongLength { .. })));
        let commented = format!("# secret-key = \"{SECRET}\"\n");
        assert!(matches!(parse(&commented), Err(KeyError::MissingSecret)));
    }

    #[test]
    fn a_public_file_round_trips_and_a_secret_file_gives_its_public_key() {
        let pair = CurveKeypair::generate();
        let path = temp_path("public");
        pair.public().write_file(&path).expect("write public file");
        assert_eq!(
            CurvePublicKey::from_file(&path).expect("read"),
            pair.public()
        );
        pair.write_file(&path).expect("write secret file");
        assert_eq!(
            CurvePublicKey::from_file(&path).expect("read"),
            pair.public()
        );
        std::fs::remove_file(&path).expect("remove key file");
        assert!(matches!(
            parse_public("metadata\n"),
            Err(KeyError::MissingPublic)
        ));
        assert!(matches!(
            parse_public("public-key = \"abc\"\n"),
            Err(KeyError::WrongLength { .. })
        ));
    }

    #[test]
    fn missing_file_is_an_io_error() {
        let err = CurveKeypair::from_file(temp_path("absent")).expect_err("no such file");
        assert!(matches!(err, KeyError::Io(_)), "{err}");
    }
}
