//! Keeps a repeating WARN to one line per key per window: a peer refused every 100 ms
//! is one line every 10 s, with how many refusals it stands for.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::sync::LockUnpoisoned;

/// How long a key's WARN stands for its repeats.
pub(crate) const WARN_WINDOW: Duration = Duration::from_secs(10);

/// Keys remembered at most; past that the oldest windows are forgotten (a flood of
/// distinct keys is logged, not stored).
const MAX_KEYS: usize = 1024;

/// Which occurrences of a repeating event are logged.
#[derive(Default)]
pub(crate) struct WarnLimit {
    windows: Mutex<HashMap<String, Window>>,
}

struct Window {
    opened: Instant,
    /// Occurrences since the window opened, the logged one aside.
    repeats: u64,
}

impl WarnLimit {
    /// `Some(n)` when this occurrence of `key` is to be logged, `n` being how many were
    /// not logged since the last one; `None` inside the window.
    pub(crate) fn admit(&self, key: &str) -> Option<u64> {
        let now = Instant::now();
        let mut windows = self.windows.lock_unpoisoned();
        if let Some(window) = windows.get_mut(key) {
            if now.duration_since(window.opened) < WARN_WINDOW {
                window.repeats += 1;
                return None;
            }
            let repeats = window.repeats;
            *window = Window {
                opened: now,
                repeats: 0,
            };
            return Some(repeats);
        }
        if windows.len() >= MAX_KEYS {
            windows.retain(|_, w| now.duration_since(w.opened) < WARN_WINDOW);
            if windows.len() >= MAX_KEYS {
                return Some(0);
            }
        }
        windows.insert(
            key.to_string(),
            Window {
                opened: now,
                repeats: 0,
            },
        );
        Some(0)
    }

    /// Forgets `key`: its next occurrence is logged at once (the condition ended).
    pub(crate) fn clear(&self, key: &str) {
        self.windows.lock_unpoisoned().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn one_occurrence_per_key_per_window_is_logged_with_the_count_it_stands_for() {
        let limit = WarnLimit::default();
        assert_eq!(limit.admit("a"), Some(0));
        for _ in 0..49 {
            assert_eq!(limit.admit("a"), None);
        }
        assert_eq!(limit.admit("b"), Some(0), "another key has its own window");
        tokio::time::advance(WARN_WINDOW).await;
        assert_eq!(limit.admit("a"), Some(49));
        limit.clear("a");
        assert_eq!(limit.admit("a"), Some(0));
    }

    #[tokio::test(start_paused = true)]
    async fn a_flood_of_keys_is_not_stored_past_the_bound() {
        let limit = WarnLimit::default();
        for i in 0..MAX_KEYS + 10 {
            assert_eq!(limit.admit(&i.to_string()), Some(0));
        }
        assert!(limit.windows.lock_unpoisoned().len() <= MAX_KEYS);
    }
}
