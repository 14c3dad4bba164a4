//! Validation of names given in attributes (packet names, ChannelNames).

use syn::LitStr;

/// The longest packet or channel name the wire carries, in UTF-8 bytes.
const MAX_NAME_BYTES: usize = 255;

/// Checks that a name is 1..=255 UTF-8 bytes with no control characters.
pub(crate) fn check(lit: &LitStr, what: &str) -> syn::Result<String> {
    let value = lit.value();
    let problem = if value.is_empty() {
        Some("is empty".to_string())
    } else if value.len() > MAX_NAME_BYTES {
        Some(format!("is {} bytes long", value.len()))
    } else if value.chars().any(char::is_control) {
        Some("contains a control character".to_string())
    } else {
        None
    };
    match problem {
        Some(problem) => Err(syn::Error::new(
            lit.span(),
            format!("{what} {problem}: it must be 1..={MAX_NAME_BYTES} UTF-8 bytes without control characters"),
        )),
        None => Ok(value),
    }
}
