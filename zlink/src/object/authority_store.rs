//! The authority operations, each one conditional batch on the Location Store (digest
//! §2.3): Reserve (Missing → Creating, issuing the ObjectGeneration; the AOG starts at 1), Commit (Creating →
//! Ready), Abort (Creating → Missing), Close (Ready → Closing) and Delete (→ Missing).
//!
//! Every write is conditioned on the exact StoreVersion the caller read, so a fence that
//! moved changes nothing. A write whose answer was lost is resolved by re-reading, never
//! guessed (seed 002 §7).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::authority::{Authority, AuthorityState, ObjectShape, OwnerFence, OwnerRoute};
use crate::address::Location;
use crate::address::ObjectKey;
use crate::store::resolve::apply_resolving;
use crate::store::{
    ApplyOutcome, Batch, Condition, LeaseToken, LocationStore, Mutation, ReadOutcome, StoreError,
    StoreResult, StoreVersion, MAX_GENERATION,
};

/// How often a Reserve reads again after losing a race on the generation counter.
const RESERVE_ATTEMPTS: usize = 4;

/// The last ObjectGeneration issued for one ID; never deleted, so a re-created object
/// always gets a higher one. (The AOG counts owner changes within one incarnation, so it
/// lives in the authority record and starts at 1 with each incarnation.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Generations {
    object: u64,
}

/// An authority as read, with the version every fenced write must name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Versioned {
    pub(crate) record: Authority,
    pub(crate) version: StoreVersion,
}

impl Versioned {
    /// The incarnation this authority records, and where it runs.
    pub(crate) fn location(&self) -> Location {
        Location {
            generation: self.record.fence.object_generation,
            mesh_name: self.record.route.mesh_name.clone(),
            rid: self.record.route.rid.clone(),
        }
    }
}

/// What a creation attempt wants to reserve.
#[derive(Debug, Clone)]
pub(crate) struct Draft {
    pub(crate) shape: ObjectShape,
    pub(crate) stable_type: String,
    /// The owner's lease: the reserving node's own.
    pub(crate) owner: LeaseToken,
    pub(crate) route: OwnerRoute,
    pub(crate) membership: Option<String>,
    pub(crate) creation_request: Vec<u8>,
    /// An Instance Spot's recovery pointer (its activating message's reference).
    pub(crate) activation: Option<String>,
    /// The type's `on_owner_lost = reclaim`.
    pub(crate) reclaim_on_owner_lost: bool,
}

impl Draft {
    /// The Creating record this draft reserves as ObjectGeneration `generation`.
    fn reservation(&self, generation: u64) -> Authority {
        Authority {
            state: AuthorityState::Creating,
            shape: self.shape,
            stable_type: self.stable_type.clone(),
            fence: OwnerFence {
                object_generation: generation,
                owner_generation: 1,
                owner: self.owner.owner.0.clone(),
                lease_generation: self.owner.generation,
            },
            route: self.route.clone(),
            membership: self.membership.clone(),
            creation_request: Some(self.creation_request.clone()),
            activation: self.activation.clone(),
            reclaim_on_owner_lost: self.reclaim_on_owner_lost,
        }
    }
}

/// The outcome of a Reserve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reserved {
    /// This attempt holds the Creating record: it alone runs the factory.
    Won(Versioned),
    /// A record exists already (Creating by someone else, Ready or Closing).
    Exists(Versioned),
}

/// The outcome of a fenced write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fenced<T> {
    /// Applied at the expected version.
    Done(T),
    /// The record is no longer at that version (or is gone): nothing changed.
    Moved,
}

/// Authority operations over one Location Store.
#[derive(Clone)]
pub(crate) struct AuthorityStore {
    store: Arc<dyn LocationStore>,
}

fn encode_generations(g: Generations) -> StoreResult<bytes::Bytes> {
    crate::wire::cbor_encode(&g)
        .map_err(|e| StoreError::InvalidArgument(format!("generations record: {e}")))
}

impl AuthorityStore {
    pub(crate) fn new(store: Arc<dyn LocationStore>) -> Self {
        AuthorityStore { store }
    }

    /// The current authority of `key`, if any.
    pub(crate) async fn read(&self, key: &ObjectKey) -> StoreResult<Option<Versioned>> {
        match self.store.read(&key.authority_record()).await? {
            ReadOutcome::Missing => Ok(None),
            ReadOutcome::Found { value, version, .. } => Ok(Some(Versioned {
                record: Authority::decode(&value)?,
                version,
            })),
        }
    }

    async fn read_generations(
        &self,
        key: &ObjectKey,
    ) -> StoreResult<(Generations, Option<StoreVersion>)> {
        match self.store.read(&key.generations_record()).await? {
            ReadOutcome::Missing => Ok((Generations::default(), None)),
            ReadOutcome::Found { value, version, .. } => {
                let g = crate::wire::cbor_decode(&value)
                    .map_err(|e| StoreError::Protocol(format!("generations record: {e}")))?;
                Ok((g, Some(version)))
            }
        }
    }

    /// Missing → Creating, with a new ObjectGeneration (and AOG 1), in one batch conditioned
    /// on the record being absent and the generation counter unchanged: exactly one of
    /// any number of racing attempts wins.
    ///
    /// The first attempt reads nothing: it assumes an ID never used (no record, no
    /// counter), so a new ID is reserved in one round trip. When that condition fails,
    /// the record and the counter are read (together) and the batch conditioned on what
    /// they were.
    pub(crate) async fn reserve(&self, key: &ObjectKey, draft: Draft) -> StoreResult<Reserved> {
        let mut last = (Generations::default(), None);
        for attempt in 0..=RESERVE_ATTEMPTS {
            if attempt > 0 {
                let (existing, generations) =
                    tokio::join!(self.read(key), self.read_generations(key));
                if let Some(existing) = existing? {
                    return Ok(Reserved::Exists(existing));
                }
                last = generations?;
            }
            let (generations, counter_version) = &last;
            if generations.object >= MAX_GENERATION {
                return Err(StoreError::GenerationExhausted);
            }
            let next = Generations {
                object: generations.object + 1,
            };
            let record = draft.reservation(next.object);
            let counter_condition = match counter_version {
                Some(v) => Condition::Version(key.generations_record(), v.clone()),
                None => Condition::Missing(key.generations_record()),
            };
            let batch = Batch {
                conditions: vec![
                    Condition::Missing(key.authority_record()),
                    counter_condition,
                ],
                mutations: vec![
                    Mutation::Put {
                        key: key.generations_record(),
                        value: encode_generations(next)?,
                        retention: None,
                    },
                    Mutation::Put {
                        key: key.authority_record(),
                        value: record.encode()?,
                        retention: None,
                    },
                ],
            };
            match apply_resolving(self.store.as_ref(), &batch).await? {
                ApplyOutcome::Applied(versions) => {
                    let version = versions.get(1).cloned().ok_or_else(|| {
                        StoreError::Protocol("a reserve applied without its versions".into())
                    })?;
                    return Ok(Reserved::Won(Versioned { record, version }));
                }
                ApplyOutcome::Conflict => continue,
            }
        }
        Err(StoreError::Unavailable(format!(
            "the authority of {:?} kept changing during {RESERVE_ATTEMPTS} reserve attempts",
            key.id
        )))
    }

    /// Replaces the record at `expected` with `next` (or removes it), in one batch.
    async fn replace(
        &self,
        key: &ObjectKey,
        expected: &StoreVersion,
        next: Option<&Authority>,
    ) -> StoreResult<Fenced<Option<StoreVersion>>> {
        let mutation = match next {
            Some(record) => Mutation::Put {
                key: key.authority_record(),
                value: record.encode()?,
                retention: None,
            },
            None => Mutation::Delete(key.authority_record()),
        };
        let batch = Batch {
            conditions: vec![Condition::Version(key.authority_record(), expected.clone())],
            mutations: vec![mutation],
        };
        Ok(match apply_resolving(self.store.as_ref(), &batch).await? {
            ApplyOutcome::Applied(versions) => Fenced::Done(versions.into_iter().next()),
            ApplyOutcome::Conflict => Fenced::Moved,
        })
    }

    /// Writes `current` changed by `change`, at exactly `current`'s version.
    async fn update(
        &self,
        key: &ObjectKey,
        current: &Versioned,
        what: &str,
        change: impl FnOnce(&mut Authority),
    ) -> StoreResult<Fenced<Versioned>> {
        let mut record = current.record.clone();
        change(&mut record);
        Ok(
            match self.replace(key, &current.version, Some(&record)).await? {
                Fenced::Done(Some(version)) => Fenced::Done(Versioned { record, version }),
                Fenced::Done(None) => {
                    return Err(StoreError::Protocol(format!(
                        "{what} applied without a version"
                    )))
                }
                Fenced::Moved => Fenced::Moved,
            },
        )
    }

    /// An Instance Spot's first message has run: its recovery pointer goes, at exactly
    /// `current`'s version.
    pub(crate) async fn clear_activation(
        &self,
        key: &ObjectKey,
        current: &Versioned,
    ) -> StoreResult<Fenced<Versioned>> {
        self.update(key, current, "a recovery pointer's removal", |record| {
            record.activation = None;
        })
        .await
    }

    /// Creating → Ready: publishes the reservation the caller won, dropping the kept
    /// creation request (an Instance Spot's recovery pointer stays).
    pub(crate) async fn commit(
        &self,
        key: &ObjectKey,
        won: &Versioned,
    ) -> StoreResult<Fenced<Versioned>> {
        self.update(key, won, "a commit", |record| {
            record.state = AuthorityState::Ready;
            record.creation_request = None;
        })
        .await
    }

    /// Ready → Closing: no new message is admitted; the owner finishes and then deletes.
    pub(crate) async fn begin_close(
        &self,
        key: &ObjectKey,
        ready: &Versioned,
    ) -> StoreResult<Fenced<Versioned>> {
        self.update(key, ready, "a close", |record| {
            record.state = AuthorityState::Closing;
        })
        .await
    }

    /// Moves a Ready Actor to another Spot (a membership change on its own node),
    /// fenced on the exact authority the move was admitted under.
    pub(crate) async fn set_membership(
        &self,
        key: &ObjectKey,
        ready: &Versioned,
        spot: &str,
    ) -> StoreResult<Fenced<Versioned>> {
        if ready.record.state != AuthorityState::Ready || ready.record.shape != ObjectShape::Actor {
            return Ok(Fenced::Moved);
        }
        self.update(key, ready, "a membership change", |record| {
            record.membership = Some(spot.to_string());
        })
        .await
    }

    /// Writes the record unchanged at exactly `current`'s version: a change fenced on
    /// that version (a move's owner change) can no longer apply.
    pub(crate) async fn refence(
        &self,
        key: &ObjectKey,
        current: &Versioned,
    ) -> StoreResult<Fenced<Versioned>> {
        self.update(key, current, "a re-fence", |_| {}).await
    }

    /// A move's owner change (NewOwner): `next` replaces the record at exactly the version
    /// the source sealed it under. The caller built `next` with AOG + 1 and the same
    /// ObjectGeneration.
    pub(crate) async fn move_owner(
        &self,
        key: &ObjectKey,
        sealed_at: &StoreVersion,
        next: &Authority,
    ) -> StoreResult<Fenced<StoreVersion>> {
        Ok(match self.replace(key, sealed_at, Some(next)).await? {
            Fenced::Done(Some(version)) => Fenced::Done(version),
            Fenced::Done(None) => {
                return Err(StoreError::Protocol(
                    "an owner change applied without a version".into(),
                ))
            }
            Fenced::Moved => Fenced::Moved,
        })
    }

    /// Removes the record at exactly this version: Abort of a reservation, or the end of
    /// a close or destroy. The generation counter stays, so the ID's next incarnation gets
    /// a higher ObjectGeneration.
    pub(crate) async fn delete(
        &self,
        key: &ObjectKey,
        current: &Versioned,
    ) -> StoreResult<Fenced<()>> {
        Ok(match self.replace(key, &current.version, None).await? {
            Fenced::Done(_) => Fenced::Done(()),
            Fenced::Moved => Fenced::Moved,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::SpotId;
    use crate::store::{MemoryLocationStore, OwnerId};

    fn key(id: &str) -> ObjectKey {
        ObjectKey::from(&SpotId::new(id).unwrap())
    }

    fn draft(owner: &str) -> Draft {
        Draft {
            shape: ObjectShape::UserSpot,
            stable_type: "room".into(),
            owner: LeaseToken {
                owner: OwnerId(owner.into()),
                generation: 1,
            },
            route: OwnerRoute {
                mesh_name: "m".into(),
                rid: owner.into(),
                node_generation: 1,
            },
            membership: None,
            creation_request: b"req".to_vec(),
            activation: None,
            reclaim_on_owner_lost: false,
        }
    }

    fn store() -> AuthorityStore {
        AuthorityStore::new(Arc::new(MemoryLocationStore::new()))
    }

    #[tokio::test]
    async fn exactly_one_of_many_racing_reserves_wins() {
        let authority = store();
        let attempts = (0..16).map(|i| {
            let authority = authority.clone();
            async move { authority.reserve(&key("r"), draft(&format!("n{i}"))).await }
        });
        let results = futures::future::join_all(attempts).await;
        let won: Vec<&Versioned> = results
            .iter()
            .filter_map(|r| match r {
                Ok(Reserved::Won(v)) => Some(v),
                _ => None,
            })
            .collect();
        assert_eq!(won.len(), 1, "{results:?}");
        assert!(results
            .iter()
            .all(|r| matches!(r, Ok(Reserved::Won(_)) | Ok(Reserved::Exists(_)))));
        assert_eq!(won[0].record.state, AuthorityState::Creating);
        assert_eq!(won[0].record.fence.object_generation, 1);
    }

    #[tokio::test]
    async fn a_recreated_object_gets_a_higher_generation() {
        let authority = store();
        let Reserved::Won(first) = authority.reserve(&key("r"), draft("a")).await.unwrap() else {
            panic!("lost an uncontended reserve")
        };
        let Fenced::Done(ready) = authority.commit(&key("r"), &first).await.unwrap() else {
            panic!("commit moved")
        };
        assert_eq!(ready.record.state, AuthorityState::Ready);
        assert_eq!(ready.record.creation_request, None);
        assert_eq!(
            authority.delete(&key("r"), &ready).await.unwrap(),
            Fenced::Done(())
        );
        assert_eq!(authority.read(&key("r")).await.unwrap(), None);
        let Reserved::Won(second) = authority.reserve(&key("r"), draft("b")).await.unwrap() else {
            panic!("lost an uncontended reserve")
        };
        assert_eq!(second.record.fence.object_generation, 2);
        // A new incarnation starts its owner changes afresh.
        assert_eq!(second.record.fence.owner_generation, 1);
    }

    #[tokio::test]
    async fn a_write_at_an_old_version_changes_nothing() {
        let authority = store();
        let Reserved::Won(won) = authority.reserve(&key("r"), draft("a")).await.unwrap() else {
            panic!("lost")
        };
        let Fenced::Done(ready) = authority.commit(&key("r"), &won).await.unwrap() else {
            panic!("moved")
        };
        // The Creating version is stale now: abort and a second commit both miss.
        assert_eq!(
            authority.delete(&key("r"), &won).await.unwrap(),
            Fenced::Moved
        );
        assert_eq!(
            authority.commit(&key("r"), &won).await.unwrap(),
            Fenced::Moved
        );
        let Fenced::Done(closing) = authority.begin_close(&key("r"), &ready).await.unwrap() else {
            panic!("moved")
        };
        assert_eq!(closing.record.state, AuthorityState::Closing);
        assert_eq!(authority.read(&key("r")).await.unwrap(), Some(closing));
    }

    #[tokio::test]
    async fn a_membership_change_of_an_older_incarnation_changes_nothing() {
        use crate::address::ActorId;
        let authority = store();
        let actor = ObjectKey::from(&ActorId::new("p").unwrap());
        let mut as_actor = draft("a");
        as_actor.shape = ObjectShape::Actor;
        as_actor.membership = Some("entry".into());
        let ready = |authority: AuthorityStore, draft: Draft| {
            let actor = actor.clone();
            async move {
                let Reserved::Won(won) = authority.reserve(&actor, draft).await.unwrap() else {
                    panic!("lost")
                };
                let Fenced::Done(ready) = authority.commit(&actor, &won).await.unwrap() else {
                    panic!("moved")
                };
                ready
            }
        };
        let first = ready(authority.clone(), as_actor.clone()).await;
        assert_eq!(
            authority.delete(&actor, &first).await.unwrap(),
            Fenced::Done(())
        );
        let second = ready(authority.clone(), as_actor).await;
        assert!(second.record.fence.object_generation > first.record.fence.object_generation);
        // A Join admitted under the first incarnation moves nothing of the second.
        assert_eq!(
            authority
                .set_membership(&actor, &first, "room")
                .await
                .unwrap(),
            Fenced::Moved
        );
        let Fenced::Done(moved) = authority
            .set_membership(&actor, &second, "room")
            .await
            .unwrap()
        else {
            panic!("moved")
        };
        assert_eq!(moved.record.membership.as_deref(), Some("room"));
        assert_eq!(authority.read(&actor).await.unwrap(), Some(moved));
        // A Spot's record has no membership to change.
        let Reserved::Won(won) = authority.reserve(&key("r"), draft("b")).await.unwrap() else {
            panic!("lost")
        };
        let Fenced::Done(spot) = authority.commit(&key("r"), &won).await.unwrap() else {
            panic!("moved")
        };
        assert_eq!(
            authority
                .set_membership(&key("r"), &spot, "room")
                .await
                .unwrap(),
            Fenced::Moved
        );
    }

    #[tokio::test]
    async fn an_exhausted_counter_reserves_nothing() {
        let memory = Arc::new(MemoryLocationStore::new());
        let authority = AuthorityStore::new(memory.clone());
        let full = Generations {
            object: MAX_GENERATION,
        };
        memory
            .apply(&Batch {
                conditions: vec![],
                mutations: vec![Mutation::Put {
                    key: key("r").generations_record(),
                    value: encode_generations(full).unwrap(),
                    retention: None,
                }],
            })
            .await
            .unwrap();
        assert_eq!(
            authority.reserve(&key("r"), draft("a")).await,
            Err(StoreError::GenerationExhausted)
        );
        assert_eq!(authority.read(&key("r")).await.unwrap(), None);
    }
}
