//! A zone node's desk: node-direct requests by which the ops node drains a zone node (its
//! zones move to the other zone nodes with their players, live) or returns it to service.
//! Any node of the mesh may ask: the mesh's members trust each other (run CURVE to keep
//! others out).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::{Controls, ErrorKind, HandlerContext, Operator, Runtime};

use super::broadcast::Bulletin;

/// How long a drain may take before the ops node stops waiting for its report (the
/// drain itself runs to its end).
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(60);

/// Ops → zone node: move everything away and take nothing new.
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
#[message(name = "drain-node", reply = Drained)]
pub struct DrainNode;

/// What a drain moved.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, zlink::Message)]
#[message(name = "drained")]
pub struct Drained {
    /// The node drained.
    pub node: String,
    /// Each zone that moved, and the node it runs on now.
    pub zones: Vec<(String, String)>,
    /// How many players and bots moved (with their zones, or alone).
    pub players: usize,
    /// The objects that may not move, or whose move failed, each with why.
    pub left: Vec<String>,
}

/// Ops → zone node: serve again after a drain.
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
#[message(name = "undrain-node", reply = Undrained)]
pub struct UndrainNode;

/// A drained node serves again.
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
#[message(name = "undrained")]
pub struct Undrained {
    /// The node.
    pub node: String,
}

/// Ops → zone node: how it sees the board, to compare with what the ops node published.
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
#[message(name = "checkup", reply = Checkup)]
pub struct CheckNode;

/// A zone node's own view of itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, zlink::Message)]
#[message(name = "checkup-result")]
pub struct Checkup {
    /// The node.
    pub node: String,
    /// Whether its zones refuse entry now.
    pub maintenance: bool,
    /// The number of the latest announcement it has, if any.
    pub latest_news: Option<u64>,
    /// Whether it takes no new objects (drained).
    pub draining: bool,
}

/// Zone node → the zone node that runs `zone`: move it to node `to` (its owner, which
/// starts and claims it).
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
#[message(name = "hand-zone", reply = Handed)]
pub struct HandZone {
    /// The zone's name.
    pub zone: String,
    /// The RID of the node to move it to.
    pub to: String,
}

/// Where the zone runs now.
#[derive(Debug, Clone, Serialize, Deserialize, zlink::Message)]
#[message(name = "handed")]
pub struct Handed {
    /// The RID of the node that runs it.
    pub node: String,
}

/// The desk of one zone node: [opened](Desk::open) once the node started.
#[derive(Clone)]
pub struct Desk {
    node: Arc<OnceLock<(Controls, Operator)>>,
    bulletin: Bulletin,
}

impl Desk {
    /// The desk of a node whose board is `bulletin`.
    pub fn new(bulletin: &Bulletin) -> Desk {
        Desk {
            node: Arc::default(),
            bulletin: bulletin.clone(),
        }
    }

    /// Opens the desk of `runtime`, the started node.
    pub fn open(&self, runtime: &Runtime) {
        let _ = self.node.set((runtime.controls(), runtime.operator()));
    }

    fn node(&self) -> zlink::Result<&(Controls, Operator)> {
        self.node.get().ok_or_else(|| {
            zlink::Error::new(ErrorKind::Unavailable, "the zone node is still starting")
        })
    }

    fn controls(&self) -> zlink::Result<&Controls> {
        Ok(&self.node()?.0)
    }
}

#[zlink::channel(server)]
impl Desk {
    #[handler]
    async fn drain(&self, _drain: DrainNode, _ctx: &HandlerContext) -> zlink::Result<Drained> {
        let controls = self.controls()?;
        let report = controls.drain().await?;
        let left = report
            .blocked
            .iter()
            .map(|blocked| format!("{}: {:?}", blocked.id, blocked.reason))
            .chain(report.failed.iter().map(|(id, e)| format!("{id}: {e}")))
            .collect();
        let drained = Drained {
            node: controls.rid().to_string(),
            zones: report
                .moved_spots
                .iter()
                .map(|spot| (spot.id.to_string(), spot.rid.to_string()))
                .collect(),
            players: report.moved.len(),
            left,
        };
        tracing::info!(node = %drained.node, zones = drained.zones.len(), players = drained.players, left = drained.left.len(), "drained");
        Ok(drained)
    }

    #[handler]
    async fn checkup(&self, _check: CheckNode, ctx: &HandlerContext) -> zlink::Result<Checkup> {
        Ok(Checkup {
            node: ctx.handle().rid().to_string(),
            maintenance: self.bulletin.under_maintenance(),
            latest_news: self.bulletin.news().last().map(|news| news.id),
            draining: self.node()?.1.status().draining,
        })
    }

    #[handler]
    async fn hand_zone(&self, hand: HandZone, ctx: &HandlerContext) -> zlink::Result<Handed> {
        let moved = ctx
            .handle()
            .spots()
            .relocate(&hand.zone, Some(&hand.to))
            .await?;
        tracing::info!(zone = %hand.zone, to = %moved.rid, "zone handed to its owner");
        Ok(Handed { node: moved.rid })
    }

    #[handler]
    async fn undrain(
        &self,
        _undrain: UndrainNode,
        _ctx: &HandlerContext,
    ) -> zlink::Result<Undrained> {
        let controls = self.controls()?;
        controls.undrain().await?;
        Ok(Undrained {
            node: controls.rid().to_string(),
        })
    }
}
