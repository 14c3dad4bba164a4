//! The operators' side of the board: maintenance is written to the [`MaintenanceBook`]
//! first (so it survives any node), then the whole [`Board`] is published over fanout, on
//! each change and every [`REPUBLISH`].

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use zlink::fanout::{Fanout, FanoutPublisherSpec};
use zlink::{ErrorKind, Handle};

use super::broadcast::{Announcement, Board, BROADCAST, NEWS_KEPT};
use super::desired::MaintenanceBook;

/// How often the ops node publishes the board unchanged: the longest a node that missed
/// an event, restarted or joined late waits for it.
pub const REPUBLISH: Duration = Duration::from_secs(1);
/// The longest announcement, in characters.
pub const MAX_ANNOUNCEMENT: usize = 200;

/// Sets maintenance, makes announcements and publishes the board (the ops node's).
#[derive(Clone)]
pub struct Ops {
    handle: Handle,
    book: MaintenanceBook,
    news: Arc<Mutex<VecDeque<Announcement>>>,
    /// Held from reading the board to publishing it, so boards go out in the order they
    /// were read: a republish that read the board before a change never lands after it.
    publishing: Arc<tokio::sync::Mutex<()>>,
}

impl Ops {
    /// The fanout publisher the ops node declares.
    pub fn publisher() -> FanoutPublisherSpec {
        Fanout::publisher(BROADCAST)
    }

    /// The operators of the node behind `handle`, which publishes [`Ops::publisher`],
    /// keeping maintenance in `book`.
    pub fn new(handle: &Handle, book: MaintenanceBook) -> Ops {
        Ops {
            handle: handle.clone(),
            book,
            news: Arc::default(),
            publishing: Arc::default(),
        }
    }

    /// Where maintenance is kept.
    pub fn book(&self) -> &MaintenanceBook {
        &self.book
    }

    // ANCHOR: set-maintenance
    /// Puts zone node `rid` under maintenance (its zones refuse players entering from
    /// other zones), or takes it out, and tells every node.
    pub async fn set_maintenance(&self, rid: &str, on: bool) -> zlink::Result<Board> {
        self.book.set(rid, on).await?;
        tracing::info!(node = %rid, maintenance = on, "maintenance set");
        self.publish().await
    }
    // ANCHOR_END: set-maintenance

    /// Announces `text` to every node (and, through the zones, to every player).
    pub async fn announce(&self, text: &str) -> zlink::Result<Announcement> {
        let text = text.trim();
        if text.is_empty() || text.chars().count() > MAX_ANNOUNCEMENT {
            return Err(zlink::Error::InvalidArgument(format!(
                "an announcement has 1 to {MAX_ANNOUNCEMENT} characters"
            )));
        }
        let announcement = {
            let mut news = self.news.lock().unwrap_or_else(PoisonError::into_inner);
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |since| since.as_millis() as u64);
            // Numbers grow across restarts of the ops node too: clients show each once.
            let id = news.back().map_or(now, |last| now.max(last.id + 1));
            let announcement = Announcement {
                id,
                text: text.to_string(),
            };
            news.push_back(announcement.clone());
            while news.len() > NEWS_KEPT {
                news.pop_front();
            }
            announcement
        };
        tracing::info!(id = announcement.id, text = %announcement.text, "announced");
        self.publish().await?;
        Ok(announcement)
    }

    /// The board as it is now.
    pub async fn board(&self) -> zlink::Result<Board> {
        let news = {
            let news = self.news.lock().unwrap_or_else(PoisonError::into_inner);
            news.iter().cloned().collect()
        };
        Ok(Board {
            maintenance: self.book.nodes().await?,
            news,
        })
    }

    /// Publishes the board now.
    pub async fn publish(&self) -> zlink::Result<Board> {
        let _in_order = self.publishing.lock().await;
        let board = self.board().await?;
        self.handle.fanout().publish(BROADCAST, &board).await?;
        Ok(board)
    }

    /// Publishes the board every [`REPUBLISH`] until the node stops.
    pub fn keep_publishing(&self) -> tokio::task::JoinHandle<()> {
        let ops = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(REPUBLISH).await;
                match ops.publish().await {
                    Ok(_) => {}
                    Err(e) if e.kind() == Some(ErrorKind::ShuttingDown) => return,
                    Err(e) => tracing::warn!(error = %e, "the board was not republished"),
                }
            }
        })
    }
}
