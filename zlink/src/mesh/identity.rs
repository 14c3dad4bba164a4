//! Node identity: RIDs and lifecycle generations.

/// A fresh RID of the form `<prefix>-<uuid-v4>` (36 lowercase hex-and-dash characters).
pub fn generate_rid(prefix: &str) -> String {
    let b: [u8; 16] = rand::random();
    let mut u = u128::from_be_bytes(b);
    // Version 4 and RFC 4122 variant bits.
    u = (u & !(0xF << 76)) | (0x4 << 76);
    u = (u & !(0x3 << 62)) | (0x2 << 62);
    let h = format!("{u:032x}");
    format!(
        "{prefix}-{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// A random non-zero lifecycle generation; compared only for equality.
pub(crate) fn generate_generation() -> u64 {
    loop {
        let g: u64 = rand::random::<u64>() >> 1;
        if g != 0 {
            return g;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn generated_rid_has_prefix_and_uuid_v4_form() {
        let rid = super::generate_rid("node");
        let uuid = rid
            .strip_prefix("node-")
            .expect("the generated RID has its prefix");
        assert_eq!(uuid.len(), 36);
        assert_eq!(uuid.as_bytes()[14], b'4');
        assert!(matches!(uuid.as_bytes()[19], b'8' | b'9' | b'a' | b'b'));
        assert_ne!(super::generate_rid("node"), rid);
    }
}
