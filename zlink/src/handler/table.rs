//! The runtime's index of one handler group: packet name -> handler position and kind,
//! built once at registration so dispatch is one map lookup.

use std::collections::HashMap;
use std::sync::Arc;

use super::{HandlerGroup, PacketKind};

/// One handler of a group.
#[derive(Debug, Clone)]
pub(crate) struct HandlerSlot {
    /// Its position in the group's `packets()`.
    pub(crate) index: usize,
    pub(crate) kind: PacketKind,
    /// The packet name, interned for every context that names it.
    pub(crate) packet: Arc<str>,
}

/// A handler group with its packet index.
#[derive(Clone)]
pub(crate) struct HandlerTable {
    group: Arc<dyn HandlerGroup>,
    slots: HashMap<Box<str>, HandlerSlot>,
}

impl HandlerTable {
    /// Indexes `group` (the first of a duplicated name wins; validation refuses duplicates
    /// before a runtime starts).
    pub(crate) fn new(group: Arc<dyn HandlerGroup>) -> Self {
        let mut slots = HashMap::new();
        for (index, (name, kind)) in group.packets().into_iter().enumerate() {
            let packet: Arc<str> = Arc::from(name.as_str());
            slots.entry(name.into_boxed_str()).or_insert(HandlerSlot {
                index,
                kind,
                packet,
            });
        }
        HandlerTable { group, slots }
    }

    pub(crate) fn group(&self) -> &Arc<dyn HandlerGroup> {
        &self.group
    }

    /// The handler of `packet`, if the group has one of that kind.
    pub(crate) fn find(&self, packet: &str, kind: PacketKind) -> Option<&HandlerSlot> {
        self.slots.get(packet).filter(|s| s.kind == kind)
    }
}
