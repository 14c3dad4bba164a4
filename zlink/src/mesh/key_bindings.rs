//! Which CURVE key proved each RID (seed 000 §2.3: a node's key is its security identity).
//! The first key that proves a RID keeps it; another key claiming it is refused.
//!
//! The table is bounded without letting one key push out another key's bindings: each key
//! keeps at most [`MAX_RIDS_PER_KEY`] RIDs (a node restarting under one key gets a fresh
//! RID each run, so its own oldest goes first), and a binding whose RID has a live
//! connection is never forgotten.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use crate::link::CurvePublicKey;
use crate::sync::LockUnpoisoned;

/// RIDs one key keeps bound at most; past it the key's own oldest RID with no live
/// connection is forgotten.
const MAX_RIDS_PER_KEY: usize = 16;

/// Bindings kept at most over all keys. Past it the oldest idle binding of the key that
/// holds the most goes; when every binding is live, the newcomer is refused.
const MAX_BINDINGS: usize = 4096;

/// RID → CURVE key, first proof wins.
#[derive(Debug, Default)]
pub(crate) struct KeyBindings {
    inner: Mutex<Bindings>,
}

#[derive(Debug, Default)]
struct Bindings {
    keys: HashMap<String, CurvePublicKey>,
    /// Each key's RIDs, oldest first.
    by_key: HashMap<CurvePublicKey, VecDeque<String>>,
}

impl Bindings {
    /// Forgets `key`'s oldest RID without a live connection; false if every one is live.
    fn forget_oldest_idle(&mut self, key: &CurvePublicKey, live: &impl Fn(&str) -> bool) -> bool {
        let Some(rids) = self.by_key.get_mut(key) else {
            return false;
        };
        let Some(at) = rids.iter().position(|rid| !live(rid)) else {
            return false;
        };
        if let Some(rid) = rids.remove(at) {
            self.keys.remove(&rid);
        }
        if rids.is_empty() {
            self.by_key.remove(key);
        }
        true
    }
}

impl KeyBindings {
    fn lock(&self) -> std::sync::MutexGuard<'_, Bindings> {
        self.inner.lock_unpoisoned()
    }

    /// The key bound to `rid`, if any.
    pub(crate) fn get(&self, rid: &str) -> Option<CurvePublicKey> {
        self.lock().keys.get(rid).copied()
    }

    /// Binds `rid` to `key` unless another key holds it. `live` says which RIDs have a
    /// live connection now: their bindings are never forgotten to make room.
    pub(crate) fn bind(
        &self,
        rid: &str,
        key: CurvePublicKey,
        live: impl Fn(&str) -> bool,
    ) -> Result<(), String> {
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
        if b.by_key.get(&key).map_or(0, VecDeque::len) >= MAX_RIDS_PER_KEY {
            b.forget_oldest_idle(&key, &live);
        }
        if b.keys.len() >= MAX_BINDINGS {
            let mut holders: Vec<(usize, CurvePublicKey)> =
                b.by_key.iter().map(|(k, rids)| (rids.len(), *k)).collect();
            holders.sort_by_key(|holder| std::cmp::Reverse(holder.0));
            let made_room = holders
                .iter()
                .any(|(_, holder)| b.forget_oldest_idle(holder, &live));
            if !made_room {
                return Err(format!(
                    "rid {rid} cannot be bound: all {MAX_BINDINGS} CURVE key bindings have a live connection"
                ));
            }
        }
        b.keys.insert(rid.to_string(), key);
        b.by_key.entry(key).or_default().push_back(rid.to_string());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A distinct public key per `n` (the table never checks that it is a curve point).
    fn key(n: u32) -> CurvePublicKey {
        let mut bytes = [0u8; 32];
        bytes[..4].copy_from_slice(&n.to_be_bytes());
        CurvePublicKey::from_bytes(bytes)
    }

    fn nobody_live(_: &str) -> bool {
        false
    }

    #[test]
    fn the_first_key_keeps_the_rid() {
        let bindings = KeyBindings::default();
        let (a, b) = (key(1), key(2));
        assert!(bindings.bind("n1", a, nobody_live).is_ok());
        assert!(bindings.bind("n1", a, nobody_live).is_ok());
        assert!(bindings.bind("n1", b, nobody_live).is_err());
        assert_eq!(bindings.get("n1"), Some(a));
    }

    #[test]
    fn a_key_cycling_fresh_rids_pushes_out_only_its_own_bindings() {
        let bindings = KeyBindings::default();
        let (honest, cycling) = (key(1), key(2));
        bindings.bind("n1", honest, nobody_live).unwrap();
        for i in 0..10 * MAX_BINDINGS {
            bindings
                .bind(&format!("fresh-{i}"), cycling, nobody_live)
                .expect("fresh rids bind");
        }
        assert_eq!(bindings.get("n1"), Some(honest), "n1 is still n1's");
        assert!(bindings.bind("n1", cycling, nobody_live).is_err());
        let b = bindings.lock();
        assert_eq!(b.by_key[&cycling].len(), MAX_RIDS_PER_KEY);
        assert_eq!(b.keys.len(), MAX_RIDS_PER_KEY + 1);
    }

    #[test]
    fn a_live_rid_keeps_its_binding_and_a_full_live_table_refuses_the_newcomer() {
        let bindings = KeyBindings::default();
        let one = key(1);
        bindings.bind("live", one, nobody_live).unwrap();
        let live = |rid: &str| rid == "live";
        for i in 0..MAX_RIDS_PER_KEY {
            bindings.bind(&format!("r{i}"), one, live).unwrap();
        }
        assert_eq!(
            bindings.get("live"),
            Some(one),
            "a live RID is never forgotten"
        );
        assert_eq!(bindings.get("r0"), None, "the oldest idle one went");
        // Every binding live, the table full: the newcomer is refused, nothing is dropped.
        let full = KeyBindings::default();
        for i in 0..MAX_BINDINGS {
            full.bind(&format!("k{i}"), key(i as u32), nobody_live)
                .unwrap();
        }
        let everyone = |_: &str| true;
        let newcomer = key(u32::MAX);
        assert!(full.bind("late", newcomer, everyone).is_err());
        assert_eq!(full.lock().keys.len(), MAX_BINDINGS);
        // Once one is idle, it makes room.
        assert!(full.bind("late", newcomer, |rid| rid != "k7").is_ok());
        assert_eq!(full.get("k7"), None);
    }
}
