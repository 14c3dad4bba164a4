//! The zone nodes: two nodes that each own two zones (north and south), serving the zone
//! and player types, and putting each zone on its owner.

use zlink::object::{SpotCreation, SpotRef};
use zlink::{Runtime, RuntimeBuilder};

use super::player::Player;
use super::world::Zone;
use super::zone::{Maintenance, ZoneSpot, CHANNEL};

/// Which node owns which zones: players crossing between north and south move between
/// nodes; crossing east-west stays on one node.
pub const OWNERS: [(&str, [Zone; 2]); 2] = [
    ("zn-a", [Zone::Nw, Zone::Ne]),
    ("zn-b", [Zone::Sw, Zone::Se]),
];

/// The RID of the node that owns `zone`.
pub fn owner_of(zone: Zone) -> &'static str {
    OWNERS
        .iter()
        .find(|(_, zones)| zones.contains(&zone))
        .map(|(rid, _)| *rid)
        .unwrap_or(OWNERS[0].0)
}

/// `builder` made a zone node: it serves zones (under `maintenance`, this node's flag)
/// and players, and takes the zones' border bands.
pub fn zone_node(
    builder: RuntimeBuilder,
    maintenance: &Maintenance,
) -> zlink::Result<RuntimeBuilder> {
    let maintenance = maintenance.clone();
    Ok(builder
        .multicast_channel(CHANNEL)
        .spot_type(ZoneSpot::spot_type(move |ctx| {
            ZoneSpot::new(ctx.id().as_str(), maintenance.clone())
        })?)
        .actor_type(Player::actor_type(|_| Player::default())?))
}

/// Creates each zone (or finds it) and moves it to its owner among `nodes` if it runs
/// elsewhere.
pub async fn place_zones(nodes: &[&Runtime]) -> zlink::Result<Vec<SpotRef>> {
    let Some(first) = nodes.first() else {
        return Ok(Vec::new());
    };
    let mut placed = Vec::new();
    for zone in Zone::ALL {
        let spot = match first
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
        let owner = owner_of(zone);
        let spot = match nodes.iter().find(|node| node.rid() == spot.rid) {
            Some(runs_it) if spot.rid != owner => {
                runs_it.spots().relocate(zone.name(), Some(owner)).await?
            }
            _ => spot,
        };
        placed.push(spot);
    }
    Ok(placed)
}
