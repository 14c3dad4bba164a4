//! Which CURVE key proved each RID (seed 000 §2.3: a node's key is its security identity).
//! The first key that proves a RID keeps it; another key claiming it is refused.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use crate::link::CurvePublicKey;

/// Bindings kept at most. Past it the oldest binding is forgotten: a trusted peer cycling
/// fresh RIDs can only push out bindings of RIDs long gone, never grow the table.
const MAX_BINDINGS: usize = 4096;

/// RID → CURVE key, first proof wins.
#[derive(Debug, Default)]
pub(crate) struct KeyBindings {
    inner: Mutex<Bindings>,
}

#[derive(Debug, Default)]
struct Bindings {
    keys: HashMap<String, CurvePublicKey>,
    order: VecDeque<String>,
}

impl KeyBindings {
    fn lock(&self) -> std::sync::MutexGuard<'_, Bindings> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The key bound to `rid`, if any.
    pub(crate) fn get(&self, rid: &str) -> Option<CurvePublicKey> {
        self.lock().keys.get(rid).copied()
    }

    /// Binds `rid` to `key` unless another key holds it.
    pub(crate) fn bind(&self, rid: &str, key: CurvePublicKey) -> Result<(), String> {
        let mut b = self.lock();
        match b.keys.get(rid) {
            Some(bound) if *bound == key => return Ok(()),
            Some(bound) => {
                return Err(format!(
                    "rid {rid} is bound to CURVE key {bound}, not {key}"
                ))
            }
            None => {}
        }
        if b.keys.len() >= MAX_BINDINGS {
            if let Some(oldest) = b.order.pop_front() {
                b.keys.remove(&oldest);
            }
        }
        b.keys.insert(rid.to_string(), key);
        b.order.push_back(rid.to_string());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::CurveKeypair;

    #[test]
    fn the_first_key_keeps_the_rid_and_the_table_is_bounded() {
        let bindings = KeyBindings::default();
        let (a, b) = (
            CurveKeypair::generate().public(),
            CurveKeypair::generate().public(),
        );
        assert!(bindings.bind("n1", a).is_ok());
        assert!(bindings.bind("n1", a).is_ok());
        assert!(bindings.bind("n1", b).is_err());
        assert_eq!(bindings.get("n1"), Some(a));
        for i in 0..MAX_BINDINGS {
            bindings
                .bind(&format!("fresh-{i}"), b)
                .expect("fresh rids bind");
        }
        assert_eq!(bindings.lock().keys.len(), MAX_BINDINGS);
        assert_eq!(bindings.get("n1"), None, "the oldest binding went first");
    }
}
