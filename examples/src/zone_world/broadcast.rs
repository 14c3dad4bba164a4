//! What the operators tell every node, over classic fanout: which zone nodes are under
//! maintenance and the latest announcements. The ops node publishes the whole [`Board`]
//! on each change and again every second, so a node that lost an event (fanout is lossy),
//! restarted or joined late has it within a second; each node keeps its copy in a
//! [`Bulletin`] that its zones read.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use zlink::fanout::{Fanout, FanoutSubscriberSpec};
use zlink::HandlerContext;

/// The fanout channel of the board.
pub const BROADCAST: &str = "zw-broadcast";
/// How many announcements the board keeps (the newest last).
pub const NEWS_KEPT: usize = 5;

/// One announcement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Announcement {
    /// Its number, growing with each announcement of one ops node.
    pub id: u64,
    /// What it says.
    pub text: String,
}

/// Ops → every node (fanout): the zone nodes under maintenance and the latest
/// announcements, whole.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, zlink::Message)]
#[message(name = "board")]
pub struct Board {
    /// The RIDs of the zone nodes under maintenance.
    pub maintenance: Vec<String>,
    /// The latest announcements, oldest first.
    pub news: Vec<Announcement>,
}

/// What one node knows of the board: its own maintenance flag and the announcements.
#[derive(Debug, Clone, Default)]
pub struct Bulletin(Arc<Posted>);

#[derive(Debug, Default)]
struct Posted {
    maintenance: AtomicBool,
    news: Mutex<VecDeque<Announcement>>,
}

impl Bulletin {
    /// A bulletin that starts with the node under maintenance or not (as the desired
    /// state read at start says).
    pub fn starting(maintenance: bool) -> Bulletin {
        let bulletin = Bulletin::default();
        bulletin.set_maintenance(maintenance);
        bulletin
    }

    /// Whether the node is under maintenance: its zones refuse players entering from
    /// other zones.
    pub fn under_maintenance(&self) -> bool {
        self.0.maintenance.load(Ordering::Acquire)
    }

    /// Turns the node's maintenance on or off.
    pub fn set_maintenance(&self, on: bool) {
        self.0.maintenance.store(on, Ordering::Release);
    }

    /// The announcements, oldest first.
    pub fn news(&self) -> Vec<Announcement> {
        let news = self.0.news.lock().unwrap_or_else(PoisonError::into_inner);
        news.iter().cloned().collect()
    }

    fn replace_news(&self, latest: &[Announcement]) {
        let mut news = self.0.news.lock().unwrap_or_else(PoisonError::into_inner);
        news.clear();
        let skip = latest.len().saturating_sub(NEWS_KEPT);
        news.extend(latest.iter().skip(skip).cloned());
    }
}

/// A node's subscriber of the board: it keeps the node's [`Bulletin`] in step.
#[derive(Clone)]
pub struct BoardReader {
    rid: String,
    bulletin: Bulletin,
}

impl BoardReader {
    /// The subscriber of node `rid`, keeping `bulletin`. It finds the ops node's publisher
    /// through the Location Store.
    pub fn subscriber(rid: &str, bulletin: &Bulletin) -> FanoutSubscriberSpec {
        let reader = BoardReader {
            rid: rid.to_string(),
            bulletin: bulletin.clone(),
        };
        Fanout::subscriber(BROADCAST, reader).discover()
    }
}

// ANCHOR: board-reader
#[zlink::channel(server)]
impl BoardReader {
    #[handler]
    async fn board(&self, board: Board, _ctx: &HandlerContext) -> zlink::Result<()> {
        let on = board.maintenance.contains(&self.rid);
        if on != self.bulletin.under_maintenance() {
            tracing::info!(node = %self.rid, maintenance = on, "maintenance changed");
        }
        self.bulletin.set_maintenance(on);
        self.bulletin.replace_news(&board.news);
        Ok(())
    }
}
// ANCHOR_END: board-reader

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bulletin_keeps_the_newest_announcements_only() {
        let bulletin = Bulletin::default();
        let news: Vec<Announcement> = (1..=8)
            .map(|id| Announcement {
                id,
                text: format!("news {id}"),
            })
            .collect();
        bulletin.replace_news(&news);
        let kept: Vec<u64> = bulletin.news().iter().map(|a| a.id).collect();
        assert_eq!(kept, [4, 5, 6, 7, 8]);
    }
}
