//! The Redis key layout. Membership keys (leases, descriptors, their indexes and change
//! stamps) share the hash tag `{<prefix>}`, because a descriptor write checks its owner's
//! lease and a scan checks every listed owner's lease in the same script. Records of one
//! group share the tag `{<prefix>:g:<group>}`.
//!
//! Variable parts are length-prefixed (`<bytes>:<text>`) so no two logical keys collide.

use crate::store::types::{DescriptorKey, DescriptorScope, OwnerId, RecordKey};

/// Builds keys under one prefix.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    prefix: String,
}

fn seg(text: &str) -> String {
    format!("{}:{text}", text.len())
}

impl Keys {
    pub(crate) fn new(prefix: &str) -> Self {
        Keys {
            prefix: prefix.to_string(),
        }
    }

    fn membership(&self) -> String {
        format!("{{{}}}", self.prefix)
    }

    pub(crate) fn lease_prefix(&self) -> String {
        format!("{}:lease:", self.membership())
    }

    pub(crate) fn lease(&self, owner: &OwnerId) -> String {
        format!("{}{}", self.lease_prefix(), owner.0)
    }

    pub(crate) fn lease_counter(&self) -> String {
        format!("{}:lease-counter", self.membership())
    }

    fn scope_part(scope: &DescriptorScope) -> String {
        format!("{}:{}", scope.kind.tag(), seg(&scope.scope))
    }

    pub(crate) fn descriptor_prefix(&self, scope: &DescriptorScope) -> String {
        format!("{}:desc:{}:", self.membership(), Self::scope_part(scope))
    }

    pub(crate) fn descriptor(&self, key: &DescriptorKey) -> String {
        format!("{}{}", self.descriptor_prefix(&key.scope), key.id)
    }

    pub(crate) fn index(&self, scope: &DescriptorScope) -> String {
        format!("{}:index:{}", self.membership(), Self::scope_part(scope))
    }

    pub(crate) fn stamp(&self, scope: &DescriptorScope) -> String {
        format!("{}:stamp:{}", self.membership(), Self::scope_part(scope))
    }

    fn group(&self, group: &str) -> String {
        format!("{{{}:g:{}}}", self.prefix, seg(group))
    }

    pub(crate) fn record(&self, key: &RecordKey) -> String {
        format!("{}:rec:{}", self.group(&key.group), key.name)
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

    fn tag(key: &str) -> &str {
        let start = key.find('{').expect("the key has a hash tag") + 1;
        let end = start + key[start..].find('}').expect("the key has a hash tag");
        &key[start..end]
    }

    #[test]
    fn membership_keys_share_one_hash_tag_and_groups_share_theirs() {
        let keys = Keys::new("app");
        let scope = DescriptorScope {
            kind: DescriptorKind::MeshNode,
            scope: "mesh".into(),
        };
        let desc = DescriptorKey {
            scope: scope.clone(),
            id: "rid-1".into(),
        };
        let membership = [
            keys.lease(&OwnerId("o".into())),
            keys.lease_counter(),
            keys.descriptor(&desc),
            keys.index(&scope),
            keys.stamp(&scope),
        ];
        assert!(membership.iter().all(|k| tag(k) == "app"));
        let a = RecordKey::new("spot-7", "meta");
        let b = RecordKey::new("spot-7", "payload");
        assert_eq!(tag(&keys.record(&a)), tag(&keys.record(&b)));
        assert_eq!(tag(&keys.record(&a)), tag(&keys.sequence("spot-7")));
        assert_ne!(
            tag(&keys.record(&a)),
            tag(&keys.record(&RecordKey::new("spot-8", "meta")))
        );
    }

    #[test]
    fn length_prefixes_keep_scopes_apart() {
        let keys = Keys::new("p");
        let a = DescriptorScope {
            kind: DescriptorKind::MeshNode,
            scope: "a:1".into(),
        };
        let b = DescriptorScope {
            kind: DescriptorKind::MeshNode,
            scope: "a".into(),
        };
        assert_ne!(keys.index(&a), keys.index(&b));
        assert!(!keys
            .descriptor_prefix(&a)
            .starts_with(&keys.descriptor_prefix(&b)));
    }
}
