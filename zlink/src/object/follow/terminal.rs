//! Terminal records: the result of a request relayed to an object's new owner, kept in
//! the Relocation Store as the reply leaves the new owner. If the relaying node loses its
//! connection to the new owner before the reply arrives, it reads the record (waiting for
//! it until the request's deadline) and still gives the caller the one terminal result
//! the handler produced, instead of an "outcome unknown" `Unavailable`. The reply does not
//! wait for the record: the record only matters when the reply is lost, and the relaying
//! node looks for it until the deadline.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use tokio_util::task::TaskTracker;

use crate::mesh::PendingReply;
use crate::store::{PayloadRead, PayloadRef, RelocationStore};
use crate::{Error, ErrorKind, Result};

/// The metadata key a relayed request carries its relay ID under. The new owner removes
/// it before the handler sees the metadata.
pub(crate) const RELAY_ID_KEY: &str = "zlink.relay";

/// How long a terminal record outlives the request's deadline.
const KEPT_PAST_DEADLINE: Duration = Duration::from_secs(60);

#[derive(Debug, Serialize, Deserialize)]
enum Terminal {
    Ok(#[serde(with = "serde_bytes")] Vec<u8>),
    Failed {
        kind: u8,
        detail: String,
        #[serde(default)]
        refusal: Option<u8>,
    },
}

fn reference(relay_id: &str) -> Result<PayloadRef> {
    PayloadRef::new(format!("zlink:terminal:{relay_id}"))
        .map_err(|e| Error::new(ErrorKind::ProtocolError, format!("a relay ID: {e}")))
}

/// Where the new owner records a relayed request's result.
pub(crate) struct Recorder {
    store: Arc<dyn RelocationStore>,
    reference: PayloadRef,
    retention: Duration,
    tracker: TaskTracker,
}

impl Recorder {
    /// For the relayed request `relay_id` (bounded to a UUID's length), kept until
    /// `deadline` and a minute after.
    pub(crate) fn new(
        store: Arc<dyn RelocationStore>,
        relay_id: &str,
        deadline: Option<Instant>,
        tracker: TaskTracker,
    ) -> Result<Self> {
        if relay_id.is_empty() || relay_id.len() > 64 {
            return Err(Error::new(
                ErrorKind::ProtocolError,
                "a relay ID of 1..=64 bytes",
            ));
        }
        let left = deadline.map_or(Duration::from_secs(30), |d| {
            d.saturating_duration_since(Instant::now())
        });
        Ok(Recorder {
            store,
            reference: reference(relay_id)?,
            retention: left + KEPT_PAST_DEADLINE,
            tracker,
        })
    }

    /// Replies with `result` and records it. A record that cannot be written only
    /// matters if the reply is lost too.
    fn record(self, pending: PendingReply, result: Result<Bytes>) {
        let Recorder {
            store,
            reference,
            retention,
            tracker,
        } = self;
        let terminal = match &result {
            Ok(bytes) => Terminal::Ok(bytes.to_vec()),
            Err(e) => match crate::mesh::reply_outcome(Err(e.clone())) {
                crate::wire::ReplyOutcome::Failed {
                    kind,
                    detail,
                    refusal,
                } => Terminal::Failed {
                    kind,
                    detail,
                    refusal,
                },
                crate::wire::ReplyOutcome::Ok(_) => Terminal::Failed {
                    kind: ErrorKind::InternalFailure.code(),
                    detail: e.to_string(),
                    refusal: None,
                },
            },
        };
        pending.finish(result);
        let bytes = match crate::wire::cbor_encode(&terminal) {
            Ok(bytes) => bytes,
            Err(e) => {
                return tracing::warn!(error = %e, "a relayed request's result does not encode")
            }
        };
        tracker.spawn(async move {
            if let Err(e) = store.put(&reference, &bytes, retention).await {
                tracing::warn!(reference = %reference, error = %e, "a relayed request's result was not recorded");
            }
        });
    }
}

/// On the relaying node, after its connection to the new owner was lost: the recorded
/// result of relay `relay_id`, read until `deadline`. `None` when none was recorded by then
/// (the request's outcome stays unknown).
pub(crate) async fn recover(
    store: &dyn RelocationStore,
    relay_id: &str,
    deadline: Instant,
) -> Option<Result<Bytes>> {
    let reference = reference(relay_id).ok()?;
    let mut pause = Duration::from_millis(20);
    loop {
        match store.read(&reference).await {
            Ok(PayloadRead::Found { bytes, .. }) => {
                let terminal: Terminal = crate::wire::cbor_decode(&bytes).ok()?;
                return Some(match terminal {
                    Terminal::Ok(bytes) => Ok(Bytes::from(bytes)),
                    Terminal::Failed {
                        kind,
                        detail,
                        refusal,
                    } => {
                        let error = Error::new(
                            ErrorKind::from_code(kind).unwrap_or(ErrorKind::InternalFailure),
                            detail,
                        );
                        Err(match refusal.and_then(crate::Refusal::from_code) {
                            Some(refusal) => error.with_refusal(refusal),
                            None => error,
                        })
                    }
                });
            }
            Ok(PayloadRead::Missing) => {}
            Err(e) => tracing::debug!(error = %e, "reading a terminal record; trying again"),
        }
        if Instant::now() + pause >= deadline {
            return None;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(250));
    }
}

impl crate::object::object_job::ResultRecorder for Recorder {
    fn reply_and_record(self: Box<Self>, pending: PendingReply, result: Result<Bytes>) {
        self.record(pending, result)
    }
}
