//! The world's fixed rules: a 100×100 grid of integer cells in four quadrant zones, the
//! border bands between adjacent zones, and which moves are refused, in which order.
//!
//! Everything here is plain data and pure functions, so the zones, the players, the bots
//! and the tests all judge a move the same way.

use serde::{Deserialize, Serialize};

/// Cells per side: x and y run from 0 to 99; y grows southward.
pub const SIZE: i32 = 100;
/// Where the zones split, on both axes.
pub const HALF: i32 = SIZE / 2;
/// How deep a border band reaches into each zone from a shared edge.
pub const BORDER_BAND: i32 = 10;
/// The most a move may change each axis.
pub const MAX_STEP: i32 = 5;
/// Where every player starts (in [`Zone::Nw`]).
pub const START: Cell = Cell { x: 25, y: 25 };

/// A cell of the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Cell {
    /// West to east, 0..100.
    pub x: i32,
    /// North to south, 0..100.
    pub y: i32,
}

impl Cell {
    /// Whether the cell lies on the grid.
    pub fn on_grid(self) -> bool {
        (0..SIZE).contains(&self.x) && (0..SIZE).contains(&self.y)
    }

    /// The zone the cell belongs to (a cell off the grid belongs to none).
    pub fn zone(self) -> Option<Zone> {
        if !self.on_grid() {
            return None;
        }
        Some(match (self.x < HALF, self.y < HALF) {
            (true, true) => Zone::Nw,
            (false, true) => Zone::Ne,
            (true, false) => Zone::Sw,
            (false, false) => Zone::Se,
        })
    }

    /// The adjacent zones whose border band holds this cell: within [`BORDER_BAND`] of
    /// the edge this cell's zone shares with them.
    pub fn bands(self) -> Vec<Zone> {
        let Some(zone) = self.zone() else {
            return Vec::new();
        };
        zone.adjacent()
            .into_iter()
            .filter(|other| zone.distance_to_edge(self, *other) < BORDER_BAND)
            .collect()
    }
}

/// One of the four quadrant zones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Zone {
    /// North-west: x < 50, y < 50.
    Nw,
    /// North-east: x ≥ 50, y < 50.
    Ne,
    /// South-west: x < 50, y ≥ 50.
    Sw,
    /// South-east: x ≥ 50, y ≥ 50.
    Se,
}

impl Zone {
    /// Every zone, in a fixed order.
    pub const ALL: [Zone; 4] = [Zone::Nw, Zone::Ne, Zone::Sw, Zone::Se];

    /// The zone's short name: `nw`, `ne`, `sw` or `se` (its Spot's ID).
    pub fn name(self) -> &'static str {
        match self {
            Zone::Nw => "nw",
            Zone::Ne => "ne",
            Zone::Sw => "sw",
            Zone::Se => "se",
        }
    }

    /// The zone a name names.
    pub fn from_name(name: &str) -> Option<Zone> {
        Zone::ALL.into_iter().find(|zone| zone.name() == name)
    }

    /// The two zones sharing an edge with this one (never the diagonal one).
    pub fn adjacent(self) -> [Zone; 2] {
        match self {
            Zone::Nw => [Zone::Ne, Zone::Sw],
            Zone::Ne => [Zone::Nw, Zone::Se],
            Zone::Sw => [Zone::Nw, Zone::Se],
            Zone::Se => [Zone::Ne, Zone::Sw],
        }
    }

    /// Whether the two zones share an edge.
    pub fn is_adjacent(self, other: Zone) -> bool {
        self.adjacent().contains(&other)
    }

    /// How many cells `cell` (in this zone) lies from the edge shared with `other`.
    fn distance_to_edge(self, cell: Cell, other: Zone) -> i32 {
        let west = matches!(self, Zone::Nw | Zone::Sw);
        let north = matches!(self, Zone::Nw | Zone::Ne);
        if west != matches!(other, Zone::Nw | Zone::Sw) {
            // The edge between them runs north-south at x = 50.
            if west {
                HALF - 1 - cell.x
            } else {
                cell.x - HALF
            }
        } else if north {
            HALF - 1 - cell.y
        } else {
            cell.y - HALF
        }
    }
}

/// Why a move was refused, in the order the checks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Refusal {
    /// The target cell is off the grid.
    OutOfRange,
    /// The move changes an axis by more than [`MAX_STEP`].
    TooFar,
    /// The move would cross both splits at once, into the diagonal zone.
    DiagonalCrossing,
    /// The target zone's node is under maintenance and the move comes from outside it.
    ZoneMaintenance,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refusal::OutOfRange => "the target is off the grid",
            Refusal::TooFar => "a move changes each axis by at most 5",
            Refusal::DiagonalCrossing => "a move crosses one zone edge at a time",
            Refusal::ZoneMaintenance => "the target zone's node is under maintenance",
        })
    }
}

/// A move the rules let through: where it ends and whether it changes zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allowed {
    /// The target cell.
    pub to: Cell,
    /// The zone the move started in.
    pub from_zone: Zone,
    /// The zone it ends in (the same one, or an adjacent one).
    pub to_zone: Zone,
}

/// Judges a move of (`dx`, `dy`) from `from`, a cell on the grid. `blocked` says whether
/// entering a zone from another one is refused for maintenance (it is asked only when
/// the move changes zone, and only after every other check passed).
pub fn judge(
    from: Cell,
    dx: i32,
    dy: i32,
    blocked: impl Fn(Zone, Zone) -> bool,
) -> Result<Allowed, Refusal> {
    let to = Cell {
        x: from.x.saturating_add(dx),
        y: from.y.saturating_add(dy),
    };
    let (Some(from_zone), Some(to_zone)) = (from.zone(), to.zone()) else {
        return Err(Refusal::OutOfRange);
    };
    if dx.abs() > MAX_STEP || dy.abs() > MAX_STEP {
        return Err(Refusal::TooFar);
    }
    if from_zone != to_zone && !from_zone.is_adjacent(to_zone) {
        return Err(Refusal::DiagonalCrossing);
    }
    if from_zone != to_zone && blocked(from_zone, to_zone) {
        return Err(Refusal::ZoneMaintenance);
    }
    Ok(Allowed {
        to,
        from_zone,
        to_zone,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(_: Zone, _: Zone) -> bool {
        false
    }

    #[test]
    fn the_quadrants_split_at_fifty_and_only_edge_sharing_zones_are_adjacent() {
        let at = |x, y| Cell { x, y }.zone();
        assert_eq!(at(49, 49), Some(Zone::Nw));
        assert_eq!(at(50, 49), Some(Zone::Ne));
        assert_eq!(at(49, 50), Some(Zone::Sw));
        assert_eq!(at(99, 99), Some(Zone::Se));
        assert_eq!(at(100, 0), None);
        assert_eq!(at(0, -1), None);
        assert!(Zone::Nw.is_adjacent(Zone::Ne) && Zone::Nw.is_adjacent(Zone::Sw));
        assert!(!Zone::Nw.is_adjacent(Zone::Se) && !Zone::Ne.is_adjacent(Zone::Sw));
        assert_eq!(START.zone(), Some(Zone::Nw));
        for zone in Zone::ALL {
            assert_eq!(Zone::from_name(zone.name()), Some(zone));
        }
    }

    #[test]
    fn a_border_band_reaches_ten_cells_into_each_side_of_a_shared_edge() {
        let bands = |x, y| Cell { x, y }.bands();
        assert_eq!(bands(40, 20), vec![Zone::Ne]);
        assert_eq!(bands(39, 20), Vec::<Zone>::new());
        assert_eq!(bands(59, 20), vec![Zone::Nw]);
        assert_eq!(bands(60, 20), Vec::<Zone>::new());
        assert_eq!(bands(20, 45), vec![Zone::Sw]);
        assert_eq!(
            bands(45, 45),
            vec![Zone::Ne, Zone::Sw],
            "a corner is in both bands"
        );
        assert_eq!(bands(55, 55), vec![Zone::Ne, Zone::Sw]);
    }

    #[test]
    fn moves_are_refused_out_of_range_then_too_far_then_diagonal_then_maintenance() {
        let from = Cell { x: 48, y: 48 };
        let closed = |_: Zone, _: Zone| true;
        // Off the grid and too far and diagonal: off the grid wins.
        assert_eq!(
            judge(Cell { x: 1, y: 1 }, -9, -9, closed),
            Err(Refusal::OutOfRange)
        );
        // Too far and diagonal and under maintenance: too far wins.
        assert_eq!(judge(from, 6, 6, closed), Err(Refusal::TooFar));
        // Diagonal and under maintenance: diagonal wins.
        assert_eq!(judge(from, 3, 3, closed), Err(Refusal::DiagonalCrossing));
        assert_eq!(judge(from, 3, 0, closed), Err(Refusal::ZoneMaintenance));
        // Inside a zone, maintenance is never asked.
        assert_eq!(
            judge(from, -5, 1, closed).map(|a| a.to),
            Ok(Cell { x: 43, y: 49 })
        );
        let crossing = judge(from, 3, 0, open).unwrap();
        assert_eq!((crossing.from_zone, crossing.to_zone), (Zone::Nw, Zone::Ne));
    }

    #[test]
    fn maintenance_is_asked_with_the_zones_a_move_leaves_and_enters() {
        let asked = std::cell::RefCell::new(Vec::new());
        let record = |from, to| {
            asked.borrow_mut().push((from, to));
            false
        };
        judge(Cell { x: 50, y: 10 }, -1, 0, record).unwrap();
        judge(Cell { x: 10, y: 10 }, 1, 0, record).unwrap();
        assert_eq!(*asked.borrow(), vec![(Zone::Ne, Zone::Nw)]);
    }
}
