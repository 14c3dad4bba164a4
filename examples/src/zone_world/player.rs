//! A player: an Actor that is a member of the zone it stands in. A move inside the zone
//! is told to the zone; a move into another zone joins that zone, which moves the player to
//! the zone's node, state, generation and client connection included. Each move is
//! answered by one [`Ack`] push, in the order the client numbered them: moves that arrive
//! while the player is entering a zone wait for the entry's outcome.
//!
//! A bot is a player with a patrol and no client: a timer walks it, a refused move turns
//! it back, and nothing is ever pushed to it.

use std::collections::VecDeque;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::object::{ActorContext, JoinOutcome, RelocationState, TimerPolicy, TimerTick};

use super::messages::{Ack, Enter, Move, Place, Status, View, Welcome};
use super::patrol::{Patrol, EVERY};
use super::world::{judge, Cell, Refusal, Zone, START};

/// The timer that takes the player's next step after an entry: it tries the entry again,
/// or makes the moves that waited for it (a Join is registered from a handler or a tick,
/// not from the hook that hears how the last one ended).
const NEXT: &str = "next";
/// The pause before the moves that waited for an entry are made.
const RESUME: Duration = Duration::from_millis(1);
/// The timer that walks a bot.
const PATROL: &str = "patrol";

/// The most moves a player holds while it enters a zone; more are answered `failed`.
pub const MAX_WAITING_MOVES: usize = 64;

/// How often an entry that failed `Unavailable` (the player or the zone was being moved
/// just then) is tried again before its move is answered `failed`.
pub const ENTRY_TRIES: u32 = 20;
/// The pause before an entry is tried again.
pub const ENTRY_RETRY: Duration = Duration::from_millis(100);

/// A move into another zone, waiting for that zone to take the player.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Entering {
    /// The move's number; `None` for the first entry into the world.
    seq: Option<u64>,
    to: Cell,
    zone: Zone,
    /// How often it was tried.
    tries: u32,
}

/// One player (or bot): where it stands and how often a move took it to another node.
#[derive(Debug, Serialize, Deserialize)]
pub struct Player {
    cell: Cell,
    zone: Option<Zone>,
    /// A bot's walk; `None` for a player with a client.
    patrol: Option<Patrol>,
    /// The node it last ran a turn on.
    node: String,
    /// How often it ran on another node than before.
    relocations: u64,
    entering: Option<Entering>,
    /// Moves that arrived while entering, in arrival order.
    waiting: VecDeque<Move>,
    /// A bot's own move numbers.
    walked: u64,
    /// Pushes to the client (acks and views): none for a bot.
    pushed: u64,
    /// The number of the last account of where it stands (welcome or ack).
    version: u64,
}

impl Default for Player {
    fn default() -> Self {
        Player {
            cell: START,
            zone: None,
            patrol: None,
            node: String::new(),
            relocations: 0,
            entering: None,
            waiting: VecDeque::new(),
            walked: 0,
            pushed: 0,
            version: 0,
        }
    }
}

impl RelocationState for Player {
    fn capture(&self) -> zlink::Result<Vec<u8>> {
        crate::json_state::capture(self)
    }

    fn restore(&mut self, state: &[u8]) -> zlink::Result<()> {
        *self = crate::json_state::restore(state)?;
        Ok(())
    }
}

impl Player {
    fn welcome(&mut self, ctx: &ActorContext) -> Welcome {
        self.version += 1;
        Welcome {
            player: ctx.id().to_string(),
            cell: self.cell,
            zone: self.zone.unwrap_or(Zone::Nw),
            node: ctx.handle().rid().to_string(),
            generation: ctx.generation(),
            relocations: self.relocations,
            patrol: self.patrol,
            pushed: self.pushed,
            walked: self.walked,
            version: self.version,
        }
    }

    /// Counts a move to another node (a crossing, or a drain of its node) once, at the
    /// player's first turn there.
    fn notice_node(&mut self, ctx: &ActorContext) {
        let here = ctx.handle().rid();
        if self.node != here {
            if !self.node.is_empty() {
                self.relocations += 1;
            }
            self.node = here.to_string();
        }
    }

    fn place(&self, ctx: &ActorContext, cell: Cell) -> Place {
        Place {
            player: ctx.id().to_string(),
            cell,
            bot: self.patrol.is_some(),
        }
    }

    /// The outcome of move `seq`: pushed to a player's client; a bot turns back when it
    /// was refused.
    async fn answer(
        &mut self,
        ctx: &ActorContext,
        seq: u64,
        refused: Option<Refusal>,
        failed: Option<String>,
    ) {
        if let Some(patrol) = &mut self.patrol {
            if refused.is_some() {
                patrol.reverse();
            }
            return;
        }
        self.version += 1;
        let ack = Ack {
            version: self.version,
            seq,
            refused,
            cell: self.cell,
            zone: self.zone.unwrap_or(Zone::Nw),
            node: ctx.handle().rid().to_string(),
            generation: ctx.generation(),
            relocations: self.relocations,
            failed,
        };
        self.pushed += 1;
        if let Err(e) = ctx.push(&ack).await {
            tracing::debug!(player = %ctx.id(), seq, error = %e, "an ack was not pushed");
        }
    }

    fn join(&mut self, ctx: &ActorContext, entering: Entering) -> zlink::Result<()> {
        let request = serde_json::to_vec(&self.place(ctx, entering.to))
            .map_err(|e| zlink::Error::InvalidArgument(e.to_string()))?;
        ctx.join_spot(entering.zone.name(), request)?;
        self.entering = Some(Entering {
            tries: entering.tries + 1,
            ..entering
        });
        Ok(())
    }

    /// Whether an entry that failed with `e` waits to be tried again (the moves behind
    /// it wait too): `Unavailable` passes, as a move of the player or of the zone ends.
    fn retries(&mut self, ctx: &ActorContext, entering: Entering, e: &zlink::Error) -> bool {
        if e.kind() != Some(zlink::ErrorKind::Unavailable) || entering.tries >= ENTRY_TRIES {
            return false;
        }
        match ctx.start_timer(NEXT, ENTRY_RETRY, TimerPolicy::SkipLateTicks) {
            Ok(()) => {
                self.entering = Some(entering);
                true
            }
            Err(_) => false,
        }
    }

    /// Enters the world at `to` (its first entry, or again after a refused one).
    fn enter_at(&mut self, ctx: &ActorContext, to: Cell) -> zlink::Result<()> {
        let zone = to
            .zone()
            .ok_or_else(|| zlink::Error::InvalidArgument(format!("{to:?} is not on the grid")))?;
        self.node = ctx.handle().rid().to_string();
        self.join(
            ctx,
            Entering {
                seq: None,
                to,
                zone,
                tries: 0,
            },
        )
    }

    /// Makes move `step` (the player is in no zone entry).
    async fn make(&mut self, step: Move, ctx: &ActorContext) -> zlink::Result<()> {
        let Some(zone) = self.zone else {
            let failed = Some("enter the world first".to_string());
            self.answer(ctx, step.seq, None, failed).await;
            return Ok(());
        };
        // Maintenance is the target zone's to judge, when it is asked to take the player.
        // ANCHOR: crossing
        match judge(self.cell, step.dx, step.dy, |_, _| false) {
            Err(refusal) => self.answer(ctx, step.seq, Some(refusal), None).await,
            Ok(allowed) if allowed.to_zone == zone => {
                self.cell = allowed.to;
                let place = self.place(ctx, allowed.to);
                // By ID, untyped: the zone names this type as its members', not the other
                // way round.
                ctx.handle().spots().send(zone.name(), &place).await?;
                self.answer(ctx, step.seq, None, None).await;
            }
            Ok(allowed) => {
                let entering = Entering {
                    seq: Some(step.seq),
                    to: allowed.to,
                    zone: allowed.to_zone,
                    tries: 0,
                };
                self.join(ctx, entering)?;
            }
        }
        // ANCHOR_END: crossing
        Ok(())
    }

    /// A bot's step along its patrol (none while it enters a zone).
    async fn walk(&mut self, ctx: &ActorContext) -> zlink::Result<()> {
        let Some(patrol) = self.patrol else {
            return Ok(());
        };
        if self.entering.is_some() {
            return Ok(());
        }
        if self.zone.is_none() {
            // Its first entry was refused (its zone's node under maintenance): again.
            return self.enter_at(ctx, self.cell);
        }
        self.walked += 1;
        let (dx, dy) = patrol.step();
        let step = Move {
            seq: self.walked,
            dx,
            dy,
        };
        self.make(step, ctx).await
    }

    /// Makes the moves that waited for an entry, until one starts another entry.
    async fn resume(&mut self, ctx: &ActorContext) {
        while self.entering.is_none() {
            let Some(step) = self.waiting.pop_front() else {
                return;
            };
            let seq = step.seq;
            if let Err(e) = self.make(step, ctx).await {
                self.answer(ctx, seq, None, Some(e.to_string())).await;
            }
        }
    }
}

#[zlink::actor(type = "zw-player", relocation = preserve)]
impl Player {
    /// Enters the world (once; later calls just say where it is): a player at the start
    /// cell, a bot where its plan starts, walking by itself from then on.
    #[handler]
    async fn enter(&mut self, enter: Enter, ctx: &ActorContext) -> zlink::Result<Welcome> {
        if self.zone.is_none() && self.entering.is_none() {
            let to = match enter.bot {
                Some(plan) => {
                    self.patrol = Some(plan.patrol);
                    ctx.start_timer(PATROL, EVERY, TimerPolicy::SkipLateTicks)?;
                    plan.start
                }
                None => START,
            };
            self.cell = to;
            self.enter_at(ctx, to)?;
        }
        Ok(self.welcome(ctx))
    }

    #[handler]
    async fn status(&mut self, _status: Status, ctx: &ActorContext) -> zlink::Result<Welcome> {
        self.notice_node(ctx);
        Ok(self.welcome(ctx))
    }

    #[handler]
    async fn step(&mut self, step: Move, ctx: &ActorContext) -> zlink::Result<()> {
        self.notice_node(ctx);
        if self.entering.is_none() && self.waiting.is_empty() {
            return self.make(step, ctx).await;
        }
        if self.waiting.len() == MAX_WAITING_MOVES {
            let failed = format!("more than {MAX_WAITING_MOVES} moves wait for a zone entry");
            self.answer(ctx, step.seq, None, Some(failed)).await;
        } else {
            self.waiting.push_back(step);
        }
        Ok(())
    }

    /// The zone's view, for the player's client.
    #[handler]
    async fn view(&mut self, view: View, ctx: &ActorContext) -> zlink::Result<()> {
        self.notice_node(ctx);
        if self.patrol.is_none() {
            self.pushed += 1;
            if let Err(e) = ctx.push(&view).await {
                tracing::debug!(player = %ctx.id(), error = %e, "a view was not pushed");
            }
        }
        Ok(())
    }

    /// A bot's walk (one step along its patrol), or an entry tried again.
    #[on_timer]
    async fn timer(&mut self, tick: TimerTick, ctx: &ActorContext) -> zlink::Result<()> {
        self.notice_node(ctx);
        if &*tick.name == NEXT {
            ctx.cancel_timer(NEXT);
            return match self.entering.take() {
                Some(entering) => self.join(ctx, entering),
                None => {
                    self.resume(ctx).await;
                    Ok(())
                }
            };
        }
        self.walk(ctx).await
    }

    // ANCHOR: entered
    #[on_join_completed]
    async fn entered(&mut self, outcome: JoinOutcome, ctx: &ActorContext) {
        let Some(entering) = self.entering.take() else {
            return;
        };
        // The first entry may move a new player to its zone's node: not a relocation.
        if entering.seq.is_none() {
            self.node = ctx.handle().rid().to_string();
        }
        self.notice_node(ctx);
        let (refused, failed) = match outcome {
            JoinOutcome::Accepted { .. } => {
                self.cell = entering.to;
                self.zone = Some(entering.zone);
                (None, None)
            }
            JoinOutcome::Rejected { reply } => (
                Some(serde_json::from_slice(&reply).unwrap_or(Refusal::ZoneMaintenance)),
                None,
            ),
            JoinOutcome::Failed(e) if self.retries(ctx, entering, &e) => return,
            JoinOutcome::Failed(e) => (None, Some(e.to_string())),
        };
        match entering.seq {
            Some(seq) => self.answer(ctx, seq, refused, failed).await,
            // The first entry: the client hears where its player stands now.
            None if self.patrol.is_none() => {
                self.pushed += 1;
                let welcome = self.welcome(ctx);
                if let Err(e) = ctx.push(&welcome).await {
                    tracing::debug!(player = %ctx.id(), error = %e, "a welcome was not pushed");
                }
            }
            None => {}
        }
        if !self.waiting.is_empty() {
            if let Err(e) = ctx.start_timer(NEXT, RESUME, TimerPolicy::SkipLateTicks) {
                tracing::warn!(player = %ctx.id(), error = %e, "the waiting moves were not resumed");
            }
        }
    }
    // ANCHOR_END: entered
}
