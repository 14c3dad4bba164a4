//! A node's status stream: what changed on it, as ordered [`NodeEvent`]s, each with a
//! sequence number, read through an [`Observer`].
//!
//! Emitting never waits for an observer: events go into a bounded broadcast queue, and an
//! observer that falls more than [`OBSERVER_QUEUE`] events behind skips the oldest and
//! counts them as lost. A node that nobody ever observed keeps no events at all; once
//! observed, it retains the last [`RETAINED_EVENTS`] so that an observer can resume after
//! the last sequence it saw (an SSE client's `Last-Event-ID`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tokio::sync::broadcast;

use super::ObjectClass;
use crate::sync::LockUnpoisoned;

/// Events a node keeps, once observed, for observers that resume after a sequence.
pub const RETAINED_EVENTS: usize = 1024;
/// Events an observer may fall behind before it loses the oldest.
pub const OBSERVER_QUEUE: usize = 1024;

/// One change on a node, numbered in the order the node made it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NodeEvent {
    /// Its place in the node's stream: 1, 2, 3, … from the node's first observer on, with
    /// no gaps at the source (an observer sees a gap only where it lost events).
    pub sequence: u64,
    /// When it happened, in milliseconds since the Unix epoch.
    pub at_unix_ms: u64,
    /// What happened.
    #[serde(flatten)]
    pub what: Happened,
}

/// What changed. Serialized with an `"event"` field naming the variant in snake case.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Happened {
    /// The node's serving state changed.
    HostState {
        /// The state it is in now.
        state: HostState,
    },
    /// A RouteMesh peer became ready (its handshake and descriptor arrived).
    PeerReady {
        /// Its RID.
        peer: String,
    },
    /// A ready peer changed the weights it serves its channels with (a channel joined,
    /// left, or drained to weight 0).
    PeerWeightsChanged {
        /// Its RID.
        peer: String,
    },
    /// A ready peer was lost (its connection closed or its liveness probe failed).
    PeerLost {
        /// Its RID.
        peer: String,
    },
    /// This node created a Spot or Actor (a first incarnation or a new one).
    ObjectCreated {
        /// Spot or Actor.
        kind: ObjectClass,
        /// Its ID.
        id: String,
        /// Its ObjectGeneration.
        generation: u64,
    },
    /// A move of a Spot or Actor this node owned started.
    RelocationStarted {
        /// Spot or Actor.
        kind: ObjectClass,
        /// Its ID.
        id: String,
    },
    /// A move this node started ended.
    RelocationEnded {
        /// Spot or Actor.
        kind: ObjectClass,
        /// Its ID.
        id: String,
        /// `moved`, `cancelled` (it stays here) or `lost`.
        outcome: &'static str,
        /// The node it moved to, when it moved.
        to: Option<String>,
        /// How long the move took, in milliseconds.
        millis: u64,
    },
    /// A Spot or Actor moved here from another node.
    ObjectArrived {
        /// Spot or Actor.
        kind: ObjectClass,
        /// Its ID.
        id: String,
        /// Its ObjectGeneration (unchanged by the move).
        generation: u64,
    },
    /// A Spot or Actor this node ran stopped running here without moving (closed,
    /// evicted when idle, or stopped with the node).
    ObjectClosed {
        /// Spot or Actor.
        kind: ObjectClass,
        /// Its ID.
        id: String,
    },
    /// This node released a dead owner's objects (a reclaim).
    ObjectsReclaimed {
        /// The owner's RID, for a reclaim of a whole node; `None` for one object.
        owner: Option<String>,
        /// How many objects were released.
        released: usize,
        /// How many were left in place (a live lease, a changed record).
        refused: usize,
    },
    /// A STREAM session opened on one of this node's listeners.
    SessionOpened {
        /// The listener's name.
        listener: String,
        /// The session's ID on that listener.
        session: u64,
    },
    /// A STREAM session ended.
    SessionClosed {
        /// The listener's name.
        listener: String,
        /// The session's ID on that listener.
        session: u64,
        /// Why, as the `reason` label of `zlink_session_closed_total`.
        reason: &'static str,
    },
}

/// A node's serving state, as [`Happened::HostState`] reports it.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum HostState {
    /// Started and serving.
    Serving,
    /// Taking no new objects (after `relocate_all`, or an operator's drain).
    Draining,
    /// Shutting down.
    Stopping,
    /// Stopped.
    Stopped,
}

/// One event as an [`Observer`] reads it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Observed {
    /// The event.
    pub event: NodeEvent,
    /// How many events this observer has lost so far, this one included in its count
    /// only if events before it were skipped: the loss counter of the stream.
    pub lost: u64,
}

/// The events of one node ([`Runtime::observe`](crate::Runtime::observe)).
pub(crate) struct EventHub {
    state: std::sync::Mutex<HubState>,
    sender: broadcast::Sender<NodeEvent>,
    /// Whether anyone ever observed: until then, nothing is kept.
    observed: AtomicBool,
}

struct HubState {
    next_sequence: u64,
    retained: VecDeque<NodeEvent>,
}

impl Default for EventHub {
    fn default() -> Self {
        EventHub {
            state: std::sync::Mutex::new(HubState {
                next_sequence: 1,
                retained: VecDeque::new(),
            }),
            sender: broadcast::channel(OBSERVER_QUEUE).0,
            observed: AtomicBool::new(false),
        }
    }
}

impl EventHub {
    /// Records what `what` builds: numbered, kept and sent to the observers, once the
    /// node was ever observed (until then it is not even built). Never waits for an
    /// observer.
    pub(crate) fn emit(&self, what: impl FnOnce() -> Happened) {
        if !self.observed.load(Ordering::Acquire) {
            return;
        }
        let mut state = self.state.lock_unpoisoned();
        let sequence = state.next_sequence;
        state.next_sequence += 1;
        let event = NodeEvent {
            sequence,
            at_unix_ms: unix_millis(),
            what: what(),
        };
        if state.retained.len() == RETAINED_EVENTS {
            state.retained.pop_front();
        }
        state.retained.push_back(event.clone());
        // No receiver is not an error: an observer may come later.
        let _ = self.sender.send(event);
    }

    /// An observer of the events after sequence `after` (0: from now on). Retained events
    /// after `after` come first; those older than the retained window count as lost.
    pub(crate) fn observe(&self, after: u64) -> Observer {
        let state = self.state.lock_unpoisoned();
        self.observed.store(true, Ordering::Release);
        let receiver = self.sender.subscribe();
        let next = state.next_sequence;
        let (backlog, lost) = if after == 0 || after + 1 >= next {
            (VecDeque::new(), 0)
        } else {
            let backlog: VecDeque<NodeEvent> = state
                .retained
                .iter()
                .filter(|e| e.sequence > after)
                .cloned()
                .collect();
            let first = backlog.front().map_or(next, |e| e.sequence);
            (backlog, first.saturating_sub(after + 1))
        };
        Observer {
            receiver,
            backlog,
            lost,
            last: after,
        }
    }
}

/// An ordered stream of one node's events ([`Runtime::observe`](crate::Runtime::observe)).
/// Reading it slowly never slows the node: events it falls too far behind on are skipped
/// and counted in [`Observed::lost`].
pub struct Observer {
    receiver: broadcast::Receiver<NodeEvent>,
    backlog: VecDeque<NodeEvent>,
    lost: u64,
    /// The last sequence handed out (events at or before it are not repeated).
    last: u64,
}

impl Observer {
    /// The next event, waiting for it; `None` once the node is gone.
    pub async fn next(&mut self) -> Option<Observed> {
        loop {
            let event = match self.backlog.pop_front() {
                Some(event) => event,
                None => match self.receiver.recv().await {
                    Ok(event) => event,
                    Err(broadcast::error::RecvError::Lagged(skipped)) => {
                        self.lost += skipped;
                        continue;
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
            };
            if let Some(observed) = self.hand_out(event) {
                return Some(observed);
            }
        }
    }

    /// The next event if one is waiting, without waiting; `None` when none is (or the
    /// node is gone).
    pub fn try_next(&mut self) -> Option<Observed> {
        loop {
            let event = match self.backlog.pop_front() {
                Some(event) => event,
                None => match self.receiver.try_recv() {
                    Ok(event) => event,
                    Err(broadcast::error::TryRecvError::Lagged(skipped)) => {
                        self.lost += skipped;
                        continue;
                    }
                    Err(_) => return None,
                },
            };
            if let Some(observed) = self.hand_out(event) {
                return Some(observed);
            }
        }
    }

    /// How many events this observer has lost so far.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// `event`, unless it was already handed out (from the backlog, then the queue).
    fn hand_out(&mut self, event: NodeEvent) -> Option<Observed> {
        if event.sequence <= self.last {
            return None;
        }
        self.last = event.sequence;
        Some(Observed {
            event,
            lost: self.lost,
        })
    }
}

fn unix_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
