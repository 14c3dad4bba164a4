//! A zone: a Spot (its ID is the zone's name) whose members are the players standing in
//! it. Every tick it tells its neighbours who stands in its border bands (Logical
//! Multicast) and shows each player the zone and the bands next to it. A zone moves with
//! its players when its node is drained.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use zlink::object::{ActorRef, JoinDecision, RelocationState, SpotContext, TimerPolicy, TimerTick};
use zlink::Bytes;

use super::broadcast::Bulletin;
use super::messages::{Band, Look, Place, View};
use super::player::{Player, PlayerClient};
use super::snapshots::{world_tick, BandSnapshot, Dot, NeighbourView, TICK};
use super::world::{Cell, Refusal, Zone};

/// The RouteMesh channel the zones' border bands travel on.
pub const CHANNEL: &str = "zone-world";
/// The Logical Multicast topic of the border bands.
pub const BANDS: &str = "bands";

/// Who stands in the zone: what moves with it.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Standing {
    tick: u64,
    players: BTreeMap<String, (Cell, bool)>,
}

/// One zone.
pub struct ZoneSpot {
    /// Players admitted and not yet joined, by name: where each enters. A Join admitted
    /// may still fail (the player could not move here), so it counts from `on_joined_actor`.
    admitted: BTreeMap<String, (Cell, bool)>,
    /// The zone its ID names (the Spot fails to start under any other ID).
    zone: Zone,
    named: bool,
    standing: Standing,
    near: NeighbourView,
    bulletin: Bulletin,
}

impl ZoneSpot {
    /// The zone `id` names, on a node whose board is `bulletin`.
    pub fn new(id: &str, bulletin: Bulletin) -> ZoneSpot {
        let zone = Zone::from_name(id);
        ZoneSpot {
            admitted: BTreeMap::new(),
            zone: zone.unwrap_or(Zone::Nw),
            named: zone.is_some(),
            standing: Standing::default(),
            near: NeighbourView::default(),
            bulletin,
        }
    }

    fn view(&self) -> View {
        View {
            tick: self.standing.tick,
            zone: self.zone,
            here: self.dots(|_| true),
            near: self.near.dots().map(|(_, dot)| dot.clone()).collect(),
            news: self.bulletin.news(),
        }
    }

    fn dots(&self, only: impl Fn(Cell) -> bool) -> Vec<Dot> {
        self.standing
            .players
            .iter()
            .filter(|(_, (cell, _))| only(*cell))
            .map(|(name, (cell, bot))| Dot {
                name: name.clone(),
                cell: *cell,
                bot: *bot,
            })
            .collect()
    }
}

impl RelocationState for ZoneSpot {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        crate::json_state::capture(&self.standing)
    }

    fn restore(&mut self, state: &[u8]) -> zlink::Result<()> {
        self.standing = crate::json_state::restore(state)?;
        Ok(())
    }
}

#[zlink::spot(type = "zw-zone", relocation = preserve, actors = Player)]
impl ZoneSpot {
    #[on_initialize]
    async fn start_ticking(&mut self, ctx: &SpotContext) -> zlink::Result<()> {
        if !self.named {
            return Err(zlink::Error::InvalidArgument(format!(
                "no zone is called {:?}: zones are nw, ne, sw and se",
                ctx.id().as_str()
            )));
        }
        ctx.start_timer("tick", TICK, TimerPolicy::SkipLateTicks)
    }

    /// A member's new cell in the zone.
    #[handler]
    async fn place(&mut self, place: Place, _ctx: &SpotContext) -> zlink::Result<()> {
        if place.cell.zone() == Some(self.zone) {
            self.standing
                .players
                .insert(place.player, (place.cell, place.bot));
        }
        Ok(())
    }

    /// What the zone shows now.
    #[handler]
    async fn look(&mut self, _look: Look, _ctx: &SpotContext) -> zlink::Result<View> {
        Ok(self.view())
    }

    // ANCHOR: band-in
    /// A neighbour's border band.
    #[subscribe(channel = "zone-world", topic = "bands")]
    async fn band(&mut self, band: Band, _ctx: &SpotContext) -> zlink::Result<()> {
        if band.0.toward == self.zone && band.0.source.is_adjacent(self.zone) {
            self.near.offer(band.0);
        }
        Ok(())
    }
    // ANCHOR_END: band-in

    #[on_timer]
    async fn tick(&mut self, _tick: TimerTick, ctx: &SpotContext) -> zlink::Result<()> {
        // By the clock, and never twice the same (a late timer may fire twice in a tick).
        let tick = world_tick(SystemTime::now()).max(self.standing.tick + 1);
        self.standing.tick = tick;
        self.near.expire(tick);
        // ANCHOR: band-out
        for toward in self.zone.adjacent() {
            let band = BandSnapshot {
                source: self.zone,
                toward,
                tick,
                dots: self.dots(|cell| cell.bands().contains(&toward)),
            };
            if let Err(e) = ctx.publish(CHANNEL, BANDS, &Band(band)).await {
                tracing::debug!(zone = self.zone.name(), error = %e, "a border band was not published");
            }
        }
        // ANCHOR_END: band-out
        let view = self.view();
        for (name, (_, bot)) in &self.standing.players {
            if *bot {
                continue;
            }
            // One-way: the zone never waits for a player, which takes its turns with it.
            let shown = PlayerClient::new(ctx.handle(), name.as_str())
                .view(&view)
                .await;
            if let Err(e) = shown {
                tracing::debug!(zone = self.zone.name(), player = %name, error = %e, "a view was not sent");
            }
        }
        Ok(())
    }

    // ANCHOR: admission
    /// A player asks to enter: refused while this node is under maintenance.
    #[on_actor_join]
    async fn admit(
        &mut self,
        actor: &ActorRef,
        request: Bytes,
        _ctx: &SpotContext,
    ) -> JoinDecision {
        if self.bulletin.under_maintenance() {
            return JoinDecision::Reject(refusal(Refusal::ZoneMaintenance));
        }
        match serde_json::from_slice::<Place>(&request) {
            Ok(place) if place.cell.zone() == Some(self.zone) => {
                self.admitted
                    .insert(actor.id.to_string(), (place.cell, place.bot));
                JoinDecision::Accept(Bytes::new())
            }
            _ => JoinDecision::Reject(refusal(Refusal::OutOfRange)),
        }
    }

    #[on_joined_actor]
    async fn joined(&mut self, actor: &ActorRef, _ctx: &SpotContext) {
        if let Some(entered) = self.admitted.remove(actor.id.as_str()) {
            self.standing.players.insert(actor.id.to_string(), entered);
        }
    }
    // ANCHOR_END: admission

    #[on_leave_actor]
    async fn left(&mut self, actor: &ActorRef, _ctx: &SpotContext) {
        self.standing.players.remove(actor.id.as_str());
    }
}

/// A declined Join's reply: the refusal, as JSON (the player reads it back).
fn refusal(why: Refusal) -> Bytes {
    Bytes::from(serde_json::to_vec(&why).unwrap_or_default())
}
