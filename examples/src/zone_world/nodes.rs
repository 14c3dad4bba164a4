//! The zone nodes: two nodes that each own two zones (north and south) and a third that
//! owns none at the start (it takes zones and players when another is drained), all
//! serving the zone and player types and following the ops node's board.

use zlink::object::{SpotCreation, SpotRef};
use zlink::{Handle, RuntimeBuilder};

use super::broadcast::{BoardReader, Bulletin};
use super::desired::MaintenanceBook;
use super::desk::{Desk, HandZone};
use super::player::Player;
use super::world::Zone;
use super::zone::{ZoneSpot, CHANNEL};

/// Which node owns which zones: players crossing between north and south move between
/// nodes; crossing east-west stays on one node.
pub const OWNERS: [(&str, [Zone; 2]); 2] = [
    ("zn-a", [Zone::Nw, Zone::Ne]),
    ("zn-b", [Zone::Sw, Zone::Se]),
];

/// Every zone node: the owners, then the one that owns no zone at the start.
pub const ZONE_NODES: [&str; 3] = ["zn-a", "zn-b", "zn-c"];

/// The RID of the node that owns `zone`.
pub fn owner_of(zone: Zone) -> &'static str {
    OWNERS
        .iter()
        .find(|(_, zones)| zones.contains(&zone))
        .map(|(rid, _)| *rid)
        .unwrap_or(OWNERS[0].0)
}

/// What a zone node shares with its application around it: the board it follows (its
/// zones read it) and its desk (open it once the node started).
#[derive(Clone)]
pub struct ZoneNodeKit {
    /// The node's copy of the board.
    pub bulletin: Bulletin,
    /// Its desk for the ops node's drains.
    pub desk: Desk,
}

impl ZoneNodeKit {
    /// The kit of zone node `rid`, its bulletin starting as `book` says: a node restarted
    /// under maintenance refuses entry from its first turn.
    pub async fn from_book(rid: &str, book: &MaintenanceBook) -> zlink::Result<ZoneNodeKit> {
        let bulletin = Bulletin::starting(book.is_on(rid).await?);
        if bulletin.under_maintenance() {
            tracing::info!(node = %rid, "starting under maintenance");
        }
        Ok(ZoneNodeKit {
            desk: Desk::new(&bulletin),
            bulletin,
        })
    }
}

/// `builder` made zone node `rid`: it serves zones and players, takes the zones' border
/// bands, follows the board into the kit's bulletin, which its zones read, and answers
/// the ops node at the kit's desk.
pub fn zone_node(
    builder: RuntimeBuilder,
    rid: &str,
    kit: &ZoneNodeKit,
) -> zlink::Result<RuntimeBuilder> {
    let bulletin = kit.bulletin.clone();
    Ok(builder
        .rid(rid)
        .multicast_channel(CHANNEL)
        .fanout(BoardReader::subscriber(rid, &kit.bulletin))
        .node_handlers(kit.desk.clone())
        .spot_type(ZoneSpot::spot_type(move |ctx| {
            ZoneSpot::new(ctx.id().as_str(), bulletin.clone())
        })?)
        .actor_type(Player::actor_type(|_| Player::default())?))
}

/// Creates each zone `handle`'s node owns (or finds it) and, when it runs on another
/// node, asks that node to hand it over (see [`HandZone`]). A zone whose node does not
/// answer (crashed: reclaim its objects first) is left where it is and named in the error.
pub async fn claim_zones(handle: &Handle) -> zlink::Result<Vec<SpotRef>> {
    let me = handle.rid();
    let mut claimed = Vec::new();
    for zone in Zone::ALL.into_iter().filter(|zone| owner_of(*zone) == me) {
        let spot = match handle
            .spots()
            .get_or_create(zone.name(), ZoneSpot::STABLE_TYPE, "")
            .await?
        {
            SpotCreation::Created(spot, _) | SpotCreation::Existing(spot) => spot,
            SpotCreation::Rejected(why) => {
                return Err(zlink::Error::new(
                    zlink::ErrorKind::InvalidOperation,
                    format!("zone {} declined its creation: {why:?}", zone.name()),
                ))
            }
        };
        if spot.rid == me {
            claimed.push(spot);
            continue;
        }
        let hand = HandZone {
            zone: zone.name().to_string(),
            to: me.to_string(),
        };
        let handed = handle
            .nodes()
            .request(&spot.rid, &hand)
            .await
            .map_err(|e| {
                zlink::Error::new(
                    zlink::ErrorKind::Unavailable,
                    format!(
                        "zone {} runs on {}, which did not hand it over: {e}",
                        zone.name(),
                        spot.rid
                    ),
                )
            })?;
        tracing::info!(zone = zone.name(), from = %spot.rid, to = %handed.node, "zone claimed");
        let found = handle.spots().find(zone.name()).await?;
        claimed.extend(found);
    }
    Ok(claimed)
}
