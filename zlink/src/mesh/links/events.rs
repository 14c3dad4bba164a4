//! The [`LinkEvents`] a node's transports report to.

use std::sync::{Arc, Weak};

use super::Links;
use crate::link::{ConnId, Connection, Frames, LinkEvents};

/// Holds the links weakly, so transports never keep a node alive.
pub(crate) struct NodeEvents {
    links: Weak<Links>,
    /// Whether the connections reporting here were dialed by us (they may only ever be
    /// answered with admit or reject, even before the dialer has registered them).
    dialed: bool,
}

impl NodeEvents {
    /// Events of connections the node's listener accepted.
    pub(crate) fn accepted(links: Weak<Links>) -> Self {
        NodeEvents {
            links,
            dialed: false,
        }
    }

    /// Events of a connection the node dialed.
    pub(crate) fn dialed(links: Weak<Links>) -> Self {
        NodeEvents {
            links,
            dialed: true,
        }
    }
}

impl LinkEvents for NodeEvents {
    fn on_frames(&self, conn: &Arc<dyn Connection>, frames: Frames) {
        if let Some(links) = self.links.upgrade() {
            super::inbound::on_frames(&links, conn, frames, self.dialed);
        }
    }

    fn on_closed(&self, conn: ConnId) {
        if let Some(links) = self.links.upgrade() {
            links.lost(conn, "transport closed");
        }
    }
}
