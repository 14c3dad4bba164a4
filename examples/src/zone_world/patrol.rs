//! The bots' walk: 8 bots, two per zone, one patrolling along x and one along y, 3 cells
//! every 500 ms, turning back whenever a move is refused.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::world::{Cell, Zone};

/// How far a bot moves each step, along its axis.
pub const STEP: i32 = 3;
/// How often a bot moves.
pub const EVERY: Duration = Duration::from_millis(500);

/// The axis a bot walks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Axis {
    /// West and east.
    X,
    /// North and south.
    Y,
}

/// One bot's walk: its axis and which way it goes now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Patrol {
    /// The axis it walks.
    pub axis: Axis,
    /// +1 (east or south) or -1.
    pub direction: i32,
}

impl Patrol {
    /// The next move, (dx, dy).
    pub fn step(&self) -> (i32, i32) {
        match self.axis {
            Axis::X => (STEP * self.direction, 0),
            Axis::Y => (0, STEP * self.direction),
        }
    }

    /// Turns back (after a refused move).
    pub fn reverse(&mut self) {
        self.direction = -self.direction;
    }
}

/// A bot of the world: its name, where it starts and how it walks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BotPlan {
    /// Its name: `bot-<zone>-x` or `bot-<zone>-y`.
    pub name: String,
    /// Where it starts.
    pub start: Cell,
    /// Its walk, heading first toward the middle of the world (so it soon crosses).
    pub patrol: Patrol,
}

/// The world's 8 bots: in each zone, one walking along x and one along y, from the
/// middle of the zone toward the world's middle.
pub fn bots() -> Vec<BotPlan> {
    Zone::ALL
        .into_iter()
        .flat_map(|zone| {
            let west = matches!(zone, Zone::Nw | Zone::Sw);
            let north = matches!(zone, Zone::Nw | Zone::Ne);
            let centre = Cell {
                x: if west { 25 } else { 74 },
                y: if north { 25 } else { 74 },
            };
            let toward_x = if west { 1 } else { -1 };
            let toward_y = if north { 1 } else { -1 };
            [
                BotPlan {
                    name: format!("bot-{}-x", zone.name()),
                    // Off the diagonal, so the two bots of a zone never share a cell.
                    start: Cell {
                        x: centre.x,
                        y: centre.y - 5 * toward_y,
                    },
                    patrol: Patrol {
                        axis: Axis::X,
                        direction: toward_x,
                    },
                },
                BotPlan {
                    name: format!("bot-{}-y", zone.name()),
                    start: Cell {
                        x: centre.x - 5 * toward_x,
                        y: centre.y,
                    },
                    patrol: Patrol {
                        axis: Axis::Y,
                        direction: toward_y,
                    },
                },
            ]
        })
        .collect()
}

/// `n` bots: the world's 8 ([`bots`]) first, then more (`bot-9`, `bot-10`, …) spread over
/// the grid, walking along x and y in turn (the load mode's crowd).
pub fn crowd(n: usize) -> Vec<BotPlan> {
    let mut plans = bots();
    plans.truncate(n);
    for i in plans.len()..n {
        // Spread by two steps prime to the grid's side: no two of the first 100 share a cell.
        let start = Cell {
            x: ((i * 37) % 100) as i32,
            y: ((i * 61 + i / 100) % 100) as i32,
        };
        let axis = if i % 2 == 0 { Axis::X } else { Axis::Y };
        let direction = if (i / 2) % 2 == 0 { 1 } else { -1 };
        plans.push(BotPlan {
            name: format!("bot-{}", i + 1),
            start,
            patrol: Patrol { axis, direction },
        });
    }
    plans
}

#[cfg(test)]
mod tests {
    use super::super::world::judge;
    use super::*;

    #[test]
    fn eight_bots_two_per_zone_start_in_their_zone_one_per_axis() {
        let plans = bots();
        assert_eq!(plans.len(), 8);
        for zone in Zone::ALL {
            let mine: Vec<_> = plans
                .iter()
                .filter(|plan| plan.start.zone() == Some(zone))
                .collect();
            assert_eq!(mine.len(), 2, "{zone:?}");
            assert_ne!(mine[0].patrol.axis, mine[1].patrol.axis);
        }
    }

    #[test]
    fn a_crowd_starts_with_the_eight_bots_and_every_bot_starts_on_the_grid_under_its_own_name() {
        let plans = crowd(1000);
        assert_eq!(plans.len(), 1000);
        assert_eq!(plans[..8], bots()[..]);
        assert!(plans.iter().all(|plan| plan.start.on_grid()));
        let names: std::collections::BTreeSet<_> = plans.iter().map(|p| &p.name).collect();
        assert_eq!(names.len(), 1000);
        assert_eq!(crowd(3).len(), 3);
    }

    #[test]
    fn a_bot_walks_three_cells_crosses_into_the_next_zone_and_turns_back_at_the_edge() {
        let mut plan = bots().remove(0);
        assert_eq!(plan.name, "bot-nw-x");
        let mut at = plan.start;
        let (mut crossed, mut reversed) = (false, 0);
        for _ in 0..60 {
            let (dx, dy) = plan.patrol.step();
            assert_eq!((dx.abs() + dy.abs(), dy), (STEP, 0));
            match judge(at, dx, dy, |_, _| false) {
                Ok(allowed) => {
                    crossed |= allowed.to_zone == Zone::Ne;
                    at = allowed.to;
                }
                Err(_) => {
                    plan.patrol.reverse();
                    reversed += 1;
                }
            }
        }
        assert!(crossed, "it walked into ne");
        assert!(reversed >= 1, "it turned back at the world's edge");
        assert!(at.on_grid());
    }
}
