//! The owner lease: a host's sign of life in the Location Store, and the local admission
//! deadline derived from it.
//!
//! After each successful claim or renew, the deadline is `time taken before the request +
//! (store expiry - store now) - fencing margin`. Past it, the host publishes no descriptor
//! and (for objects) admits no new work, even if the store still holds the lease: network
//! delay is absorbed by anchoring on the time before the request, and the margin keeps the
//! old owner quiet before a new one can take over.

use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::resolve::claim_resolving;
use super::types::{ClaimOutcome, LeaseOutcome, LeaseToken, OwnerId};
use super::LocationStore;

/// Owner lease timings. Defaults: renew every 5 s, TTL 15 s, renew timeout 3 s, fencing
/// margin 5 s. All must be > 0 and `renew_interval + renew_timeout < ttl - fencing_margin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnerLeaseSettings {
    /// How often the lease is renewed.
    pub renew_interval: Duration,
    /// The expiry written with each claim or renew.
    pub ttl: Duration,
    /// The longest one claim or renew may take.
    pub renew_timeout: Duration,
    /// Stop admitting new work this long before the store's expiry.
    pub fencing_margin: Duration,
}

impl Default for OwnerLeaseSettings {
    fn default() -> Self {
        OwnerLeaseSettings {
            renew_interval: Duration::from_secs(5),
            ttl: Duration::from_secs(15),
            renew_timeout: Duration::from_secs(3),
            fencing_margin: Duration::from_secs(5),
        }
    }
}

impl OwnerLeaseSettings {
    /// Every rule these settings break, as (setting, problem).
    pub(crate) fn violations(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (name, value) in [
            ("owner lease renew interval", self.renew_interval),
            ("owner lease ttl", self.ttl),
            ("owner lease renew timeout", self.renew_timeout),
            ("owner lease fencing margin", self.fencing_margin),
        ] {
            if value.is_zero() {
                out.push((name.to_string(), "must be greater than zero".to_string()));
            }
        }
        let busy = self.renew_interval + self.renew_timeout;
        let usable = self.ttl.saturating_sub(self.fencing_margin);
        if busy >= usable {
            out.push((
                "owner lease".to_string(),
                format!(
                    "renew interval + renew timeout ({busy:?}) must be less than ttl - fencing margin ({usable:?})"
                ),
            ));
        }
        out
    }

    /// How soon to try again after a failed claim or renew.
    fn retry_delay(&self) -> Duration {
        self.renew_interval.min(Duration::from_secs(1))
    }
}

/// This host's lease as it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerLeaseStatus {
    /// The owner id of this host's lifecycle.
    pub owner: OwnerId,
    /// The current claim, if the host holds one.
    pub token: Option<LeaseToken>,
    /// Until when the host may admit new work and publish.
    pub admission_deadline: Option<Instant>,
}

impl OwnerLeaseStatus {
    /// Whether the host may admit new work and publish right now.
    pub fn admits_new_work(&self) -> bool {
        self.admits_new_work_at(Instant::now())
    }

    /// Whether the host may start new work at `now`.
    pub(crate) fn admits_new_work_at(&self, now: Instant) -> bool {
        self.admission_deadline
            .is_some_and(|deadline| now < deadline)
    }
}

/// The lease of one running host, shared by the keeper task and its readers.
pub(crate) struct OwnerLease {
    settings: OwnerLeaseSettings,
    /// This host's owner id (the same for the lease's whole life).
    owner: OwnerId,
    status: watch::Sender<OwnerLeaseStatus>,
    admitting: AdmittingClaim,
}

/// The claim that admits new work and until when, readable without the status lock: every
/// message to an object reads it, on every worker, and a lock (even a read lock) would be
/// a write to one cache line that all of them share.
///
/// A sequence lock: the one writer (under the status lock) makes the sequence odd, writes
/// the pair, and makes it even again; a reader takes a pair read between two equal, even
/// sequence values, so a renewal's new deadline is never seen half-written, nor with the
/// claim before it. A reader that keeps meeting writes reads the status instead.
struct AdmittingClaim {
    /// Deadlines are kept as nanoseconds after this instant.
    epoch: Instant,
    /// Even while the pair is stable; odd while it is written.
    sequence: AtomicU64,
    /// The claim's generation (0: none).
    generation: AtomicU64,
    /// Its admission deadline (0: none).
    deadline: AtomicU64,
}

/// How many writes a reader meets before it takes the status lock.
const CLAIM_READ_TRIES: usize = 32;

impl AdmittingClaim {
    fn new() -> Self {
        AdmittingClaim {
            epoch: Instant::now(),
            sequence: AtomicU64::new(0),
            generation: AtomicU64::new(0),
            deadline: AtomicU64::new(0),
        }
    }

    fn nanos(&self, at: Instant) -> u64 {
        let since = at.saturating_duration_since(self.epoch);
        since
            .as_secs()
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::from(since.subsec_nanos()))
    }

    /// Publishes a claim (by the one writer, under the status lock).
    fn set(&self, generation: Option<u64>, deadline: Option<Instant>) {
        let deadline = deadline.map_or(0, |at| self.nanos(at).max(1));
        let sequence = self.sequence.load(Ordering::Relaxed);
        self.sequence
            .store(sequence.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        self.generation
            .store(generation.unwrap_or(0), Ordering::Relaxed);
        self.deadline.store(deadline, Ordering::Relaxed);
        self.sequence
            .store(sequence.wrapping_add(2), Ordering::Release);
    }

    /// The generation of the claim that admits work at `now` (`Some(None)`: none does);
    /// `None` when every try met a write.
    fn at(&self, now: Instant) -> Option<Option<u64>> {
        for _ in 0..CLAIM_READ_TRIES {
            let before = self.sequence.load(Ordering::Acquire);
            if before % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let generation = self.generation.load(Ordering::Relaxed);
            let deadline = self.deadline.load(Ordering::Relaxed);
            fence(Ordering::Acquire);
            if self.sequence.load(Ordering::Relaxed) == before {
                let admits = generation != 0 && self.nanos(now) < deadline;
                return Some(admits.then_some(generation));
            }
        }
        None
    }
}

impl OwnerLease {
    pub(crate) fn new(settings: OwnerLeaseSettings) -> Arc<Self> {
        let owner = OwnerId::generate();
        let (status, _) = watch::channel(OwnerLeaseStatus {
            owner: owner.clone(),
            token: None,
            admission_deadline: None,
        });
        Arc::new(OwnerLease {
            settings,
            owner,
            status,
            admitting: AdmittingClaim::new(),
        })
    }

    /// The timings this lease runs with.
    pub(crate) fn settings(&self) -> &OwnerLeaseSettings {
        &self.settings
    }

    pub(crate) fn status(&self) -> OwnerLeaseStatus {
        self.status.borrow().clone()
    }

    /// Notified whenever the token or the deadline changes.
    pub(crate) fn subscribe(&self) -> watch::Receiver<OwnerLeaseStatus> {
        self.status.subscribe()
    }

    /// Whether new work is admitted at `now` and `check` holds for the current claim (this
    /// host's owner id and the claim's generation): the hot path of every object message,
    /// which takes no lock and copies nothing.
    pub(crate) fn admits_at(
        &self,
        now: Instant,
        check: impl FnOnce(&OwnerId, u64) -> bool,
    ) -> bool {
        match self.admitting.at(now) {
            Some(claim) => claim.is_some_and(|generation| check(&self.owner, generation)),
            // Every look met a write: the status, under its lock.
            None => {
                let status = self.status.borrow();
                status.admits_new_work_at(now)
                    && status
                        .token
                        .as_ref()
                        .is_some_and(|token| check(&token.owner, token.generation))
            }
        }
    }

    pub(crate) fn admitting_token(&self) -> Option<LeaseToken> {
        let status = self.status.borrow();
        status
            .admits_new_work()
            .then(|| status.token.clone())
            .flatten()
    }

    fn deadline(&self, asked_at: Instant, remaining: Duration) -> Option<Instant> {
        remaining
            .checked_sub(self.settings.fencing_margin)
            .filter(|usable| !usable.is_zero())
            .map(|usable| asked_at + usable)
    }

    fn set(&self, token: Option<LeaseToken>, deadline: Option<Instant>) {
        self.status.send_modify(|s| {
            self.admitting
                .set(token.as_ref().map(|t| t.generation), deadline);
            s.token = token;
            s.admission_deadline = deadline;
        });
    }

    /// One claim attempt; returns whether the host now holds a lease.
    pub(crate) async fn claim(&self, store: &dyn LocationStore) -> bool {
        let owner = self.status().owner;
        let asked_at = Instant::now();
        let outcome = tokio::time::timeout(
            self.settings.renew_timeout,
            claim_resolving(store, &owner, self.settings.ttl),
        )
        .await;
        let grant = match outcome {
            Ok(Ok(ClaimOutcome::Claimed(grant))) => grant,
            Ok(Ok(ClaimOutcome::Conflict)) => {
                // Owner ids are never reused: a live lease of ours is one we claimed and
                // lost the answer to. Adopt it.
                match store.read_lease(&owner).await {
                    Ok(Some(grant)) => grant,
                    _ => return false,
                }
            }
            Ok(Err(e)) => {
                tracing::warn!(owner = %owner, error = %e, "owner lease claim failed");
                return false;
            }
            Err(_) => {
                tracing::warn!(owner = %owner, "owner lease claim timed out");
                return false;
            }
        };
        let deadline = self.deadline(asked_at, grant.remaining);
        tracing::info!(owner = %owner, lease_generation = grant.token.generation, "owner lease claimed");
        self.set(Some(grant.token), deadline);
        deadline.is_some()
    }

    /// One renew attempt under `token`.
    async fn renew(&self, store: &dyn LocationStore, token: LeaseToken) -> bool {
        let asked_at = Instant::now();
        let outcome = tokio::time::timeout(
            self.settings.renew_timeout,
            store.renew_lease(&token, self.settings.ttl),
        )
        .await;
        match outcome {
            Ok(Ok(LeaseOutcome::Done(remaining))) => {
                let deadline = self.deadline(asked_at, remaining);
                self.set(Some(token), deadline);
                deadline.is_some()
            }
            Ok(Ok(LeaseOutcome::Stale)) => {
                tracing::warn!(owner = %token.owner, lease_generation = token.generation, "owner lease lost; claiming a new one");
                self.set(None, None);
                false
            }
            Ok(Err(e)) => {
                tracing::warn!(owner = %token.owner, error = %e, "owner lease renew failed; deadline not extended");
                false
            }
            Err(_) => {
                tracing::warn!(owner = %token.owner, "owner lease renew timed out; deadline not extended");
                false
            }
        }
    }

    /// Keeps the lease until `cancel`: renew every interval, retry sooner after a failure,
    /// claim a new lease when the old one is gone. How late each wake-up came is recorded
    /// in `lateness`, when given.
    pub(crate) async fn keep(
        self: Arc<Self>,
        store: Arc<dyn LocationStore>,
        cancel: CancellationToken,
        lateness: Option<metrics::Histogram>,
    ) {
        loop {
            let ok = match self.status().token {
                Some(token) => self.renew(store.as_ref(), token).await,
                None => self.claim(store.as_ref()).await,
            };
            let delay = if ok {
                self.settings.renew_interval
            } else {
                self.settings.retry_delay()
            };
            let due = Instant::now() + delay;
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(delay) => {}
            }
            if let Some(lateness) = &lateness {
                lateness.record(Instant::now().saturating_duration_since(due).as_secs_f64());
            }
        }
    }

    /// Ends the lease at shutdown (best effort, by `until`: past its TTL it expires anyway).
    pub(crate) async fn release(&self, store: &dyn LocationStore, until: tokio::time::Instant) {
        let Some(token) = self.status().token else {
            return;
        };
        self.set(None, None);
        match tokio::time::timeout_at(until, store.release_lease(&token)).await {
            Ok(Ok(_)) => tracing::info!(owner = %token.owner, "owner lease released"),
            _ => {
                tracing::warn!(owner = %token.owner, "owner lease release failed; it expires by itself")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_satisfy_the_startup_rule() {
        assert!(OwnerLeaseSettings::default().violations().is_empty());
    }

    #[test]
    fn renew_plus_timeout_must_stay_below_ttl_minus_margin() {
        let s = OwnerLeaseSettings {
            renew_interval: Duration::from_secs(5),
            ttl: Duration::from_secs(13),
            renew_timeout: Duration::from_secs(3),
            fencing_margin: Duration::from_secs(5),
        };
        // 8 s is not less than 8 s.
        assert_eq!(s.violations().len(), 1);
        let zero = OwnerLeaseSettings {
            fencing_margin: Duration::ZERO,
            ..OwnerLeaseSettings::default()
        };
        assert_eq!(zero.violations().len(), 1);
    }

    #[test]
    fn admission_deadline_is_anchored_before_the_request_minus_the_margin() {
        let lease = OwnerLease::new(OwnerLeaseSettings::default());
        let asked = Instant::now();
        let deadline = lease
            .deadline(asked, Duration::from_secs(15))
            .expect("a usable deadline");
        assert_eq!(deadline, asked + Duration::from_secs(10));
        assert_eq!(lease.deadline(asked, Duration::from_secs(5)), None);
    }

    #[test]
    fn the_lock_free_admission_read_agrees_with_the_status_it_mirrors() {
        let lease = OwnerLease::new(OwnerLeaseSettings::default());
        let now = Instant::now();
        let admitted = |at| {
            let mut seen = None;
            let yes = lease.admits_at(at, |owner, generation| {
                seen = Some((owner.clone(), generation));
                true
            });
            yes.then_some(seen).flatten()
        };
        assert_eq!(admitted(now), None, "no claim yet");
        let token = LeaseToken {
            owner: lease.status().owner,
            generation: 7,
        };
        lease.set(Some(token.clone()), Some(now + Duration::from_secs(10)));
        assert_eq!(admitted(now), Some((token.owner.clone(), 7)));
        assert!(lease.status().admits_new_work_at(now));
        assert_eq!(
            admitted(now + Duration::from_secs(10)),
            None,
            "the deadline itself admits nothing"
        );
        lease.set(Some(token.clone()), None);
        assert_eq!(admitted(now), None, "a claim without a usable deadline");
        lease.set(
            Some(LeaseToken {
                generation: 8,
                ..token
            }),
            Some(now + Duration::from_secs(20)),
        );
        assert_eq!(
            admitted(now + Duration::from_secs(15)).map(|(_, g)| g),
            Some(8)
        );
        lease.set(None, None);
        assert_eq!(admitted(now), None, "the lease is lost");
        assert!(!lease.admits_at(now, |_, _| true));
        lease.set(
            Some(LeaseToken {
                owner: lease.status().owner,
                generation: 9,
            }),
            Some(now + Duration::from_secs(5)),
        );
        assert!(
            !lease.admits_at(now, |_, _| false),
            "the check has the last word"
        );
    }

    #[test]
    fn a_renewal_never_shows_a_reader_a_moment_without_the_claim() {
        let lease = OwnerLease::new(OwnerLeaseSettings::default());
        let token = LeaseToken {
            owner: lease.status().owner,
            generation: 7,
        };
        let start = Instant::now();
        lease.set(Some(token.clone()), Some(start + Duration::from_secs(10)));
        let stop = std::sync::atomic::AtomicBool::new(false);
        let refused = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..2 {
                scope.spawn(|| {
                    while !stop.load(Ordering::Relaxed) {
                        if !lease.admits_at(start, |_, generation| generation == 7) {
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
            // Renewals of the same claim, each with a later deadline.
            for i in 0..20_000u64 {
                let deadline = start + Duration::from_secs(10) + Duration::from_micros(i);
                lease.set(Some(token.clone()), Some(deadline));
            }
            stop.store(true, Ordering::Relaxed);
        });
        assert_eq!(
            refused.into_inner(),
            0,
            "a reader saw the claim missing mid-renewal"
        );
    }
}
