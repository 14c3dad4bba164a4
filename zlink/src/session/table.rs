//! A session type's typed handlers by packet name, built once per listener.

use std::collections::HashMap;

use crate::call::PacketKind;

pub(crate) struct PacketTable {
    by_name: HashMap<&'static str, (usize, PacketKind)>,
}

impl PacketTable {
    pub(crate) fn new(packets: Vec<(&'static str, PacketKind)>) -> Self {
        let by_name = packets
            .into_iter()
            .enumerate()
            .map(|(index, (name, kind))| (name, (index, kind)))
            .collect();
        PacketTable { by_name }
    }

    /// The handler for `name`: its position and kind.
    pub(crate) fn find(&self, name: &str) -> Option<(usize, PacketKind)> {
        self.by_name.get(name).copied()
    }
}
