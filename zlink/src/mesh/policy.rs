//! The role policy of one set of links: what a RouteMesh member, a ClientServer server and
//! a ClientServer client each accept, publish, read and wait for. Every difference between
//! the three lives here, as one method per question.

use super::{MeshSettings, Topology};
use crate::store::{DescriptorKind, DescriptorScope};
use crate::wire::Command;

/// How one node's links behave, by role.
#[derive(Debug, Clone)]
pub(crate) struct RolePolicy {
    topology: Topology,
    /// RouteMesh: the MeshName; ClientServer: the channel.
    scope: String,
    /// Whether the process is a RouteMesh member at all (a process with only ClientServer
    /// or fanout roles has no mesh descriptor).
    member: bool,
}

impl RolePolicy {
    /// The policy of a node with these settings: its topology, and the scope its
    /// descriptors live under (the MeshName, or the ClientServer role's channel).
    pub(crate) fn of(settings: &MeshSettings) -> Self {
        let scope = match settings.topology {
            Topology::RouteMesh => settings.mesh_name.clone(),
            Topology::ClientServerServer | Topology::ClientServerClient => {
                settings.channels.keys().next().cloned().unwrap_or_default()
            }
        };
        RolePolicy {
            topology: settings.topology,
            scope,
            member: settings.mesh,
        }
    }

    pub(crate) fn topology(&self) -> Topology {
        self.topology
    }

    /// Which commands an admitted connection may carry towards this node. ClientServer is
    /// one-way: clients send calls, servers send only replies (and updates).
    pub(crate) fn accepts(&self, command: Command) -> bool {
        match (self.topology, command) {
            (_, Command::FanoutEvent) => false,
            (_, Command::LivenessProbe | Command::LivenessAck) => true,
            (Topology::RouteMesh, _) => true,
            (Topology::ClientServerServer, c) => {
                matches!(c, Command::ChannelSend | Command::ChannelRequest)
            }
            (Topology::ClientServerClient, c) => matches!(c, Command::Reply | Command::Update),
        }
    }

    /// Whether a peer claiming this node's own RID is refused. A ClientServer client and
    /// server of one process share its RID; RouteMesh members never do.
    pub(crate) fn refuses_own_rid(&self) -> bool {
        self.topology == Topology::RouteMesh
    }

    /// Whether a call with no ready candidate waits for one (ClientServer clients, whose
    /// servers are being admitted) instead of failing at once (RouteMesh).
    pub(crate) fn waits_for_candidates(&self) -> bool {
        self.topology == Topology::ClientServerClient
    }

    /// Whether this node holds the process's owner lease (the RouteMesh node does;
    /// ClientServer nodes act under it) and its admission is checked against the store.
    pub(crate) fn owns_lease(&self) -> bool {
        self.topology == Topology::RouteMesh
    }

    /// The descriptors this node publishes and reads: its mesh, or its ClientServer
    /// channel's servers.
    pub(crate) fn descriptor_scope(&self) -> DescriptorScope {
        let kind = match self.topology {
            Topology::RouteMesh => DescriptorKind::MeshNode,
            Topology::ClientServerServer | Topology::ClientServerClient => {
                DescriptorKind::ClientServer
            }
        };
        DescriptorScope {
            kind,
            scope: self.scope.clone(),
        }
    }

    /// Whether this node publishes a descriptor (RouteMesh members, ClientServer servers).
    pub(crate) fn publishes(&self) -> bool {
        match self.topology {
            Topology::RouteMesh => self.member,
            Topology::ClientServerServer => true,
            Topology::ClientServerClient => false,
        }
    }

    /// Whether this node reads the others' descriptors (RouteMesh members, ClientServer
    /// clients).
    pub(crate) fn reads(&self) -> bool {
        match self.topology {
            Topology::RouteMesh => self.member,
            Topology::ClientServerServer => false,
            Topology::ClientServerClient => true,
        }
    }

    /// Whether a member dials `peer` itself: a ClientServer client dials every server (its
    /// own process's too); a RouteMesh member dials only larger RIDs.
    pub(crate) fn dials(&self, me: &str, peer: &str) -> bool {
        match self.topology {
            Topology::ClientServerClient => true,
            _ => me.as_bytes() < peer.as_bytes(),
        }
    }

    /// Whether its own descriptor counts among the members it reads.
    pub(crate) fn lists_itself(&self) -> bool {
        self.topology == Topology::ClientServerClient
    }

    /// Whether members' published CURVE keys join the listener's trust set.
    pub(crate) fn trusts_members(&self) -> bool {
        self.topology == Topology::RouteMesh
    }
}
