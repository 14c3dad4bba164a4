//! The Redis key layout, chosen so every script touches one hash slot and what need not
//! share a slot is spread over the cluster:
//!
//! - **Owner slot** `{<prefix>:o:<owner>}`: one process run's lease and its lease
//!   generation counter. Renewals, the steady write load of a mesh, spread over every
//!   master.
//! - **Scope slot** `{<prefix>:d:<kind>:<scope>}`: one MeshName's (or one channel's)
//!   descriptor index, holders, bodies and change stamp. A scan reads a page of one scope
//!   in one script, so a scope is one slot; different meshes and channels land on
//!   different slots. Owner liveness is read from the owner slots after the page.
//! - **Group slot** `{<prefix>:g:<group>}`: one group of records (one object's authority)
//!   with its version sequence and counters, so one batch is one script.
//!
//! Variable parts are length-prefixed (`<bytes>:<text>`) so no two logical keys collide.

use crate::store::types::{DescriptorScope, OwnerId, RecordKey};

/// Builds keys under one prefix.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    prefix: String,
}

/// `text` with Redis glob's special characters escaped.
fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn seg(text: &str) -> String {
    format!("{}:{text}", text.len())
}

/// The four keys of one descriptor scope, in the order the scripts take them.
pub(crate) struct ScopeKeys {
    pub(crate) index: String,
    pub(crate) holders: String,
    pub(crate) bodies: String,
    pub(crate) stamp: String,
}

impl Keys {
    pub(crate) fn new(prefix: &str) -> Self {
        Keys {
            prefix: prefix.to_string(),
        }
    }

    fn owner(&self, owner: &OwnerId) -> String {
        format!("{{{}:o:{}}}", self.prefix, seg(&owner.0))
    }

    pub(crate) fn lease(&self, owner: &OwnerId) -> String {
        format!("{}:lease", self.owner(owner))
    }

    pub(crate) fn lease_counter(&self, owner: &OwnerId) -> String {
        format!("{}:lease-gen", self.owner(owner))
    }

    pub(crate) fn scope(&self, scope: &DescriptorScope) -> ScopeKeys {
        let tag = format!(
            "{{{}:d:{}:{}}}",
            self.prefix,
            scope.kind.tag(),
            seg(&scope.scope)
        );
        ScopeKeys {
            index: format!("{tag}:index"),
            holders: format!("{tag}:holders"),
            bodies: format!("{tag}:bodies"),
            stamp: format!("{tag}:stamp"),
        }
    }

    fn group(&self, group: &str) -> String {
        format!("{{{}:g:{}}}", self.prefix, seg(group))
    }

    pub(crate) fn record(&self, key: &RecordKey) -> String {
        format!("{}:rec:{}", self.group(&key.group), key.name)
    }

    /// A `SCAN MATCH` pattern for the records named `name` in every group.
    pub(crate) fn record_pattern(&self, name: &str) -> String {
        format!(
            "{{{}:g:*}}:rec:{}",
            glob_escape(&self.prefix),
            glob_escape(name)
        )
    }

    /// The group of `key` when it is a record named `name` under this prefix.
    pub(crate) fn group_of(&self, key: &str, name: &str) -> Option<String> {
        let rest = key.strip_prefix('{')?.strip_prefix(self.prefix.as_str())?;
        let rest = rest.strip_prefix(":g:")?;
        let (length, rest) = rest.split_once(':')?;
        let length: usize = length.parse().ok()?;
        let group = rest.get(..length)?;
        let tail = rest.get(length..)?;
        (tail.strip_prefix("}:rec:")? == name).then(|| group.to_string())
    }

    pub(crate) fn sequence(&self, group: &str) -> String {
        format!("{}:seq", self.group(group))
    }

    pub(crate) fn counter(&self, key: &RecordKey) -> String {
        format!("{}:ctr:{}", self.group(&key.group), key.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::types::DescriptorKind;

    #[test]
    fn a_record_key_gives_back_its_group_and_matches_the_scan_pattern() {
        let keys = Keys::new("p*x");
        let key = keys.record(&RecordKey::new("a}:rec:b", "authority"));
        assert_eq!(
            keys.group_of(&key, "authority").as_deref(),
            Some("a}:rec:b")
        );
        assert_eq!(keys.group_of(&key, "generations"), None);
        assert_eq!(Keys::new("other").group_of(&key, "authority"), None);
        assert_eq!(
            keys.record_pattern("authority"),
            "{p\\*x:g:*}:rec:authority"
        );
    }

    fn tag(key: &str) -> &str {
        let start = key.find('{').expect("the key has a hash tag") + 1;
        let end = start + key[start..].find('}').expect("the key has a hash tag");
        &key[start..end]
    }

    fn mesh(name: &str) -> DescriptorScope {
        DescriptorScope {
            kind: DescriptorKind::MeshNode,
            scope: name.into(),
        }
    }

    #[test]
    fn what_one_script_touches_shares_a_slot_and_the_rest_is_spread() {
        let keys = Keys::new("app");
        let owner = OwnerId("o1".into());
        assert_eq!(tag(&keys.lease(&owner)), tag(&keys.lease_counter(&owner)));
        assert_ne!(
            tag(&keys.lease(&owner)),
            tag(&keys.lease(&OwnerId("o2".into())))
        );
        let scope = keys.scope(&mesh("m"));
        let tags = [&scope.index, &scope.holders, &scope.bodies, &scope.stamp].map(|k| tag(k));
        assert!(tags.iter().all(|t| *t == tags[0]));
        assert_ne!(tags[0], tag(&keys.scope(&mesh("other")).index));
        assert_ne!(tags[0], tag(&keys.lease(&owner)));
        let a = RecordKey::new("spot-7", "meta");
        let b = RecordKey::new("spot-7", "payload");
        assert_eq!(tag(&keys.record(&a)), tag(&keys.record(&b)));
        assert_eq!(tag(&keys.record(&a)), tag(&keys.sequence("spot-7")));
        assert_eq!(tag(&keys.record(&a)), tag(&keys.counter(&a)));
        assert_ne!(
            tag(&keys.record(&a)),
            tag(&keys.record(&RecordKey::new("spot-8", "meta")))
        );
    }

    #[test]
    fn length_prefixes_keep_scopes_apart() {
        let keys = Keys::new("p");
        assert_ne!(keys.scope(&mesh("a:1")).index, keys.scope(&mesh("a")).index);
        let fanout = DescriptorScope {
            kind: DescriptorKind::Fanout,
            scope: "a".into(),
        };
        assert_ne!(keys.scope(&fanout).index, keys.scope(&mesh("a")).index);
    }
}
