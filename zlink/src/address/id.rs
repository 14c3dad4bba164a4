//! Global object identity: Spot and Actor IDs, stable types, and the authority key an ID
//! is stored under in the Location Store.
//!
//! An ID is 1..=255 UTF-8 bytes, case-sensitive and compared byte for byte (no Unicode
//! normalisation). It carries no owner address: the framework never parses it to find a
//! node (seed 000 §2.1).

use std::fmt;
use std::sync::Arc;

use crate::store::RecordKey;

/// The longest ID or stable type, in UTF-8 bytes.
pub const MAX_OBJECT_ID_BYTES: usize = 255;

/// Why an ID or stable type was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// Empty, or longer than [`MAX_OBJECT_ID_BYTES`].
    #[error("{what} must be 1..={MAX_OBJECT_ID_BYTES} UTF-8 bytes, got {len}")]
    Length {
        /// Which kind of name.
        what: &'static str,
        /// Its length in bytes.
        len: usize,
    },
    /// A caller-chosen Spot ID in the reserved Entry Spot format.
    #[error("{0:?} uses the reserved Entry Spot format <prefix>-entry-<uuid v4>")]
    Reserved(String),
}

fn checked(what: &'static str, text: &str) -> Result<Arc<str>, IdError> {
    if text.is_empty() || text.len() > MAX_OBJECT_ID_BYTES {
        return Err(IdError::Length {
            what,
            len: text.len(),
        });
    }
    Ok(Arc::from(text))
}

macro_rules! object_name {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Arc<str>);

        impl $name {
            /// Checks the bounds (1..=255 UTF-8 bytes).
            pub fn new(text: &str) -> Result<Self, IdError> {
                checked($what, text).map($name)
            }

            /// The text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&*self.0, f)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl TryFrom<&str> for $name {
            type Error = IdError;

            fn try_from(text: &str) -> Result<Self, IdError> {
                Self::new(text)
            }
        }
    };
}

object_name!(
    /// A Spot's global ID.
    SpotId,
    "a Spot ID"
);
object_name!(
    /// An Actor's global ID.
    ActorId,
    "an Actor ID"
);
object_name!(
    /// The stable type name a factory is registered under (never a Rust type name).
    StableType,
    "a stable type"
);

impl SpotId {
    /// The same ID in an allocation of its own: what an object keeps when every turn
    /// clones it, so that no other object's turns write the same reference count.
    pub(crate) fn own_copy(&self) -> Self {
        SpotId(Arc::from(&*self.0))
    }

    /// A Spot ID an application chose: in bounds, and not in the reserved Entry Spot format
    /// (checked before any store reservation or factory).
    pub fn chosen(text: &str) -> Result<Self, IdError> {
        let id = Self::new(text)?;
        if is_entry_spot_id(text) {
            return Err(IdError::Reserved(text.to_string()));
        }
        Ok(id)
    }

    /// The Entry Spot ID of one node lifecycle: `<prefix>-entry-<uuid v4>`, the prefix
    /// cut (at a character boundary) so the whole stays within 255 bytes.
    #[cfg_attr(not(test), allow(dead_code))] // the Entry Spot lands with the managers
    pub(crate) fn entry(prefix: &str) -> Self {
        let mut keep = prefix.len().min(MAX_OBJECT_ID_BYTES - ENTRY_SUFFIX_BYTES);
        while !prefix.is_char_boundary(keep) {
            keep -= 1;
        }
        SpotId(Arc::from(format!(
            "{}-entry-{}",
            &prefix[..keep],
            uuid_v4()
        )))
    }
}

/// `-entry-` and a 36-character UUID.
const ENTRY_SUFFIX_BYTES: usize = "-entry-".len() + 36;

/// A lowercase canonical UUID v4 (the IDs `spots().create` issues).
pub(crate) fn uuid_v4() -> String {
    let mut b: [u8; 16] = rand::random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// Whether `text` ends in `-entry-<lowercase canonical uuid v4>` after a non-empty prefix.
pub fn is_entry_spot_id(text: &str) -> bool {
    const SUFFIX: usize = ENTRY_SUFFIX_BYTES;
    if text.len() <= SUFFIX || !text.is_char_boundary(text.len() - SUFFIX) {
        return false;
    }
    let tail = &text.as_bytes()[text.len() - SUFFIX..];
    let (marker, uuid) = tail.split_at("-entry-".len());
    marker == b"-entry-" && is_uuid_v4(uuid)
}

fn is_uuid_v4(uuid: &[u8]) -> bool {
    let hex = |c: &u8| matches!(c, b'0'..=b'9' | b'a'..=b'f');
    uuid.len() == 36
        && uuid.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            14 => *c == b'4',
            19 => matches!(c, b'8' | b'9' | b'a' | b'b'),
            _ => hex(c),
        })
}

/// Which global namespace an ID lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectKind {
    /// Spots (Entry, User and Instance share one namespace).
    Spot,
    /// Actors.
    Actor,
}

/// One global object: its namespace and ID.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// Spot or Actor.
    pub kind: ObjectKind,
    /// The ID text (bounds already checked).
    pub id: Arc<str>,
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ObjectKind::Spot => write!(f, "Spot {}", self.id),
            ObjectKind::Actor => write!(f, "Actor {}", self.id),
        }
    }
}

impl From<&SpotId> for ObjectKey {
    fn from(id: &SpotId) -> Self {
        ObjectKey {
            kind: ObjectKind::Spot,
            id: id.0.clone(),
        }
    }
}

impl From<&ActorId> for ObjectKey {
    fn from(id: &ActorId) -> Self {
        ObjectKey {
            kind: ObjectKind::Actor,
            id: id.0.clone(),
        }
    }
}

impl ObjectKey {
    /// The authority key: `zla1:a:<len>:<pct-encoded id>` or `zla1:s:…`, where `<len>` is
    /// the ID's byte length and every byte outside RFC 3986's unreserved set is written
    /// `%XX` (at most 776 bytes). Every record of one object lives in this group, so one
    /// slot holds them all.
    pub(crate) fn authority_group(&self) -> String {
        let tag = match self.kind {
            ObjectKind::Actor => 'a',
            ObjectKind::Spot => 's',
        };
        let mut key = format!("zla1:{tag}:{}:", self.id.len());
        for &b in self.id.as_bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                key.push(b as char);
            } else {
                key.push_str(&format!("%{b:02X}"));
            }
        }
        key
    }

    /// The object whose authority group is `group` ([`authority_group`](Self::authority_group)
    /// read back); `None` for anything else.
    pub(crate) fn from_authority_group(group: &str) -> Option<ObjectKey> {
        let rest = group.strip_prefix("zla1:")?;
        let (tag, rest) = rest.split_once(':')?;
        let (length, encoded) = rest.split_once(':')?;
        let mut bytes = Vec::with_capacity(encoded.len());
        let mut input = encoded.bytes();
        while let Some(b) = input.next() {
            if b == b'%' {
                let high = (input.next()? as char).to_digit(16)?;
                let low = (input.next()? as char).to_digit(16)?;
                bytes.push(u8::try_from(high * 16 + low).ok()?);
            } else {
                bytes.push(b);
            }
        }
        let id = String::from_utf8(bytes).ok()?;
        if id.len() != length.parse::<usize>().ok()? {
            return None;
        }
        let kind = match tag {
            "a" => ObjectKind::Actor,
            "s" => ObjectKind::Spot,
            _ => return None,
        };
        let key = ObjectKey {
            kind,
            id: Arc::from(id),
        };
        (key.authority_group() == group).then_some(key)
    }

    /// The record holding this object's authority.
    pub(crate) fn authority_record(&self) -> RecordKey {
        RecordKey::new(self.authority_group(), "authority")
    }

    /// The record holding the last ObjectGeneration issued for this ID. It is never
    /// deleted, so a re-created object always gets a higher generation. (The AOG lives in
    /// the authority record: it starts at 1 with each incarnation and grows with each
    /// owner change.)
    pub(crate) fn generations_record(&self) -> RecordKey {
        RecordKey::new(self.authority_group(), "generations")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_1_to_255_bytes_exact_and_case_sensitive() {
        assert!(SpotId::new("").is_err());
        assert!(SpotId::new(&"x".repeat(255)).is_ok());
        assert!(ActorId::new(&"x".repeat(256)).is_err());
        // 85 three-byte characters = 255 bytes.
        assert!(ActorId::new(&"한".repeat(85)).is_ok());
        assert!(ActorId::new(&"한".repeat(86)).is_err());
        assert_ne!(SpotId::new("Room").unwrap(), SpotId::new("room").unwrap());
    }

    #[test]
    fn the_entry_spot_format_is_reserved_for_the_framework() {
        let entry = SpotId::entry("mesh");
        assert!(is_entry_spot_id(entry.as_str()), "{entry}");
        assert!(matches!(
            SpotId::chosen(entry.as_str()),
            Err(IdError::Reserved(_))
        ));
        assert!(SpotId::chosen("room-entry-7").is_ok());
        assert!(!is_entry_spot_id("-entry-") && !is_entry_spot_id(&entry.as_str()[4..]));
        let upper = entry.as_str().to_uppercase();
        assert!(SpotId::chosen(&upper).is_ok(), "only lowercase is reserved");
        let long = SpotId::entry(&"m".repeat(255));
        assert!(long.as_str().len() <= MAX_OBJECT_ID_BYTES);
        assert!(is_entry_spot_id(long.as_str()));
    }

    #[test]
    fn authority_keys_encode_every_byte_outside_the_unreserved_set() {
        let key = ObjectKey::from(&ActorId::new("p/1 ü").unwrap());
        assert_eq!(key.authority_group(), "zla1:a:6:p%2F1%20%C3%BC");
        let spot = ObjectKey::from(&SpotId::new("a-Z_0.~").unwrap());
        assert_eq!(spot.authority_group(), "zla1:s:7:a-Z_0.~");
        let worst = ObjectKey::from(&SpotId::new(&"%".repeat(255)).unwrap());
        assert_eq!(worst.authority_group().len(), 776);
        assert_eq!(key.authority_record().group, key.generations_record().group);
    }

    #[test]
    fn an_authority_group_reads_back_as_its_object_and_nothing_else_does() {
        for key in [
            ObjectKey::from(&SpotId::new("room 7/é").unwrap()),
            ObjectKey::from(&ActorId::new("p%41").unwrap()),
        ] {
            assert_eq!(
                ObjectKey::from_authority_group(&key.authority_group()),
                Some(key)
            );
        }
        for junk in [
            "",
            "zla1:x:1:a",
            "zla1:a:2:a",
            "zla1:a:1:%4",
            "zla1:a:1:%41",
            "other",
        ] {
            assert_eq!(ObjectKey::from_authority_group(junk), None, "{junk:?}");
        }
    }

    #[test]
    fn an_own_copy_is_the_same_id_in_its_own_allocation() {
        let shared = SpotId::new("room-1").unwrap();
        let copy = shared.own_copy();
        assert_eq!(copy, shared);
        assert!(!Arc::ptr_eq(&copy.0, &shared.0));
    }
}
