//! The route notices (command 44) this node has on their way, per Actor. A 44 goes out on
//! a task of its own (it is sent where nothing may wait: as a move commits, or as a
//! cancelled move lets go of its seal), and the Actor may start its next move at once:
//! that move's seal (command 42) waits here until the 44 before it was handed to the
//! link, so the session owner never sees a seal ahead of the route change it follows.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use tokio::time::Instant;

use crate::sync::LockUnpoisoned;

/// The 44s under way, by Actor ID: the latest one's number and its completion.
#[derive(Default)]
pub(crate) struct RouteNotices {
    in_flight: Mutex<HashMap<String, (u64, watch::Receiver<bool>)>>,
    next: std::sync::atomic::AtomicU64,
}

/// One 44 under way: done when dropped (sent, or given up).
pub(crate) struct InFlight {
    notices: Arc<RouteNotices>,
    actor: String,
    number: u64,
    done: watch::Sender<bool>,
}

impl RouteNotices {
    /// Marks a 44 about `actor` as under way until the returned guard drops.
    pub(crate) fn begin(self: &Arc<Self>, actor: &str) -> InFlight {
        let number = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (done, seen) = watch::channel(false);
        self.in_flight
            .lock_unpoisoned()
            .insert(actor.to_string(), (number, seen));
        InFlight {
            notices: self.clone(),
            actor: actor.to_string(),
            number,
            done,
        }
    }

    /// Waits (until `by` at most) for the 44 about `actor` under way, if any.
    pub(crate) async fn settled(&self, actor: &str, by: Instant) {
        let pending = self
            .in_flight
            .lock_unpoisoned()
            .get(actor)
            .map(|(_, seen)| seen.clone());
        if let Some(mut seen) = pending {
            // A dropped sender counts as done, as does the deadline: the seal goes on.
            let _ = tokio::time::timeout_at(by, seen.wait_for(|sent| *sent)).await;
        }
    }

    /// How many Actors have a 44 under way.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        self.in_flight.lock_unpoisoned().len()
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let _ = self.done.send(true);
        let mut in_flight = self.notices.in_flight.lock_unpoisoned();
        if in_flight
            .get(&self.actor)
            .is_some_and(|(number, _)| *number == self.number)
        {
            in_flight.remove(&self.actor);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_seal_waits_for_the_route_notice_under_way_and_no_longer() {
        let notices = Arc::new(RouteNotices::default());
        let far = Instant::now() + Duration::from_secs(5);
        // Nothing under way: at once.
        notices.settled("p", far).await;
        let first = notices.begin("p");
        let second = notices.begin("p");
        let waiting = {
            let notices = notices.clone();
            tokio::spawn(async move { notices.settled("p", far).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "the latest notice is under way");
        drop(first);
        assert_eq!(
            notices.pending(),
            1,
            "an older notice done leaves the latest"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished());
        drop(second);
        tokio::time::timeout(Duration::from_secs(1), waiting)
            .await
            .expect("woken once the latest was sent")
            .unwrap();
        assert_eq!(notices.pending(), 0);
        // A deadline ends the wait too.
        let _stuck = notices.begin("q");
        let soon = Instant::now() + Duration::from_millis(30);
        tokio::time::timeout(Duration::from_secs(1), notices.settled("q", soon))
            .await
            .expect("the deadline ends the wait");
    }
}
