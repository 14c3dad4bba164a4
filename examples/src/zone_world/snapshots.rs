//! What a zone sees of its neighbours: each adjacent zone's border band as of its latest
//! tick, forgotten once it is [`EXPIRY_TICKS`] old.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::world::{Cell, Zone};

/// A snapshot is shown while it is younger than this many ticks.
pub const EXPIRY_TICKS: u64 = 3;
/// How long a tick is.
pub const TICK: Duration = Duration::from_millis(100);

/// The world's tick at `now`: the [`TICK`]s since the Unix epoch. Every zone numbers its
/// ticks by the clock, so the numbers of zones on different nodes (and of a zone started
/// again after a restart) compare.
pub fn world_tick(now: SystemTime) -> u64 {
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    (since.as_millis() / TICK.as_millis()) as u64
}

/// One player or bot as other zones see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dot {
    /// The player's name (its Actor's ID).
    pub name: String,
    /// Where it stands.
    pub cell: Cell,
    /// Whether it is one of the world's bots.
    pub bot: bool,
}

/// The players in one zone's border band toward another, at one tick.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BandSnapshot {
    /// The zone the players are in.
    pub source: Zone,
    /// The adjacent zone whose edge the band runs along: the one that shows it.
    pub toward: Zone,
    /// The source zone's tick when it was taken.
    pub tick: u64,
    /// Who stood in the band.
    pub dots: Vec<Dot>,
}

/// The latest snapshot from each adjacent zone.
#[derive(Debug, Default)]
pub struct NeighbourView {
    latest: BTreeMap<Zone, BandSnapshot>,
}

impl NeighbourView {
    /// Keeps `snapshot` if it is newer than the one kept from its source; `false` when an
    /// older or equal tick arrives late and is dropped.
    pub fn offer(&mut self, snapshot: BandSnapshot) -> bool {
        match self.latest.get(&snapshot.source) {
            Some(kept) if kept.tick >= snapshot.tick => false,
            _ => {
                self.latest.insert(snapshot.source, snapshot);
                true
            }
        }
    }

    /// Forgets the snapshots that are [`EXPIRY_TICKS`] old or older at world tick `now`.
    pub fn expire(&mut self, now: u64) {
        self.latest
            .retain(|_, snapshot| now.saturating_sub(snapshot.tick) < EXPIRY_TICKS);
    }

    /// Every dot still shown, by source zone.
    pub fn dots(&self) -> impl Iterator<Item = (Zone, &Dot)> {
        self.latest
            .values()
            .flat_map(|snapshot| snapshot.dots.iter().map(move |dot| (snapshot.source, dot)))
    }

    /// The tick of the snapshot kept from `source`, if any.
    pub fn tick_from(&self, source: Zone) -> Option<u64> {
        self.latest.get(&source).map(|snapshot| snapshot.tick)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(source: Zone, tick: u64, name: &str) -> BandSnapshot {
        BandSnapshot {
            source,
            toward: Zone::Ne,
            tick,
            dots: vec![Dot {
                name: name.into(),
                cell: Cell { x: 45, y: 10 },
                bot: false,
            }],
        }
    }

    #[test]
    fn only_the_latest_tick_per_source_zone_is_kept() {
        let mut view = NeighbourView::default();
        assert!(view.offer(snapshot(Zone::Nw, 5, "a")));
        assert!(
            !view.offer(snapshot(Zone::Nw, 4, "late")),
            "an older tick is dropped"
        );
        assert!(
            !view.offer(snapshot(Zone::Nw, 5, "again")),
            "so is the same tick"
        );
        assert!(
            view.offer(snapshot(Zone::Se, 3, "b")),
            "each source has its own"
        );
        assert!(view.offer(snapshot(Zone::Nw, 6, "c")));
        let names: Vec<_> = view.dots().map(|(_, dot)| dot.name.as_str()).collect();
        assert_eq!(names, ["c", "b"]);
    }

    #[test]
    fn the_world_tick_counts_tenths_of_a_second_of_the_clock() {
        let at = |ms| world_tick(UNIX_EPOCH + Duration::from_millis(ms));
        assert_eq!((at(0), at(99), at(100), at(1_234)), (0, 0, 1, 12));
    }

    #[test]
    fn a_snapshot_expires_three_ticks_after_it_was_taken() {
        let mut view = NeighbourView::default();
        view.offer(snapshot(Zone::Ne, 10, "a"));
        view.expire(12);
        assert_eq!(
            view.tick_from(Zone::Ne),
            Some(10),
            "two ticks old: still shown"
        );
        view.expire(13);
        assert_eq!(view.tick_from(Zone::Ne), None, "three ticks old: gone");
        assert_eq!(view.dots().count(), 0);
    }
}
