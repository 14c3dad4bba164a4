//! A Join to a Spot on another node (digest §4.4 step 3): the Actor moves there. The
//! target Spot admits it first (`on_actor_join`, on the target, before anything is
//! built there); a decline or a failure before relay-ready leaves the Actor where it was,
//! hearing the outcome. Once the owner change committed, the target Spot hears
//! `on_joined_actor`, the Spot left hears `on_leave_actor` (one-way), and the Actor hears
//! `Accepted` on the target before its first message there.

use std::sync::Arc;

use bytes::Bytes;

use super::record::JoinIntent;
use super::source::{hand_over, prepare, Carry, HandOver};
use crate::address::SpotId;
use crate::object::instance::Instance;
use crate::object::lifecycle::Relocation;
use crate::object::live_object::LiveObject;
use crate::object::membership::JoinOutcome;
use crate::object::relocation::Moving;
use crate::object::timer::Timers;
use crate::{Error, ErrorKind};

/// Resolves once a move's seal or a close waits for `live`'s boundary.
async fn boundary_wanted(live: &LiveObject) {
    while !live.boundary_wanted() {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

/// Runs the Join of `live` (at its handler boundary, in its own turn loop) to `spot` on
/// node `rid`. `None` when the Actor moved (its loop here ends); otherwise the outcome
/// it hears here.
pub(crate) async fn join_across(
    server: &Moving,
    live: &Arc<LiveObject>,
    instance: &mut Box<dyn Instance>,
    timers: &Timers,
    spot: SpotId,
    request: Bytes,
    rid: &str,
) -> Option<JoinOutcome> {
    if live.object_type.relocation == Relocation::Disable {
        return Some(JoinOutcome::Failed(Error::new(
            ErrorKind::Rejected,
            format!(
                "Spot {spot} runs on node {rid}, and type {} is declared relocation = disable: \
                 its Actors join Spots of their own node only",
                live.object_type.stable_type
            ),
        )));
    }
    // A destroy of the Actor waits its turn, as for any move (see `LiveObject::transition`).
    let _moving = match live.transition() {
        Ok(moving) => moving,
        Err(e) => return Some(JoinOutcome::Failed(e)),
    };
    // Waiting for permits holds the Actor at its boundary: a move of its Spot that took
    // them first and waits for that boundary goes first (the Join ends Unavailable).
    let prepared = tokio::select! {
        biased;
        route = prepare(server, live, Some(rid)) => route,
        () = boundary_wanted(live) => Err(Error::new(
            ErrorKind::Unavailable,
            format!("{} is being moved or closed with its Spot: the Join to {spot} comes after", live.key),
        )),
    };
    let route = match prepared {
        Ok(route) => route,
        // The Spot's node cannot run this Actor type: no compatible node.
        Err(e) if e.is(ErrorKind::NotFound) => {
            return Some(JoinOutcome::Failed(Error::new(
                ErrorKind::Unavailable,
                format!("Spot {spot} runs on node {rid}, which cannot run this Actor: {e}"),
            )))
        }
        Err(e) => return Some(JoinOutcome::Failed(e)),
    };
    let sealed = super::seal::seal(live, &server.departures, timers, instance);
    let records = sealed.timers.clone();
    let intent = JoinIntent {
        spot: spot.to_string(),
        request: request.to_vec(),
    };
    let outcome = match hand_over(server, live, route, sealed, Carry::Join(intent), || {}).await {
        HandOver::Moved(_) | HandOver::Lost(_) => return None,
        HandOver::Cancelled(e) => JoinOutcome::Failed(e),
        HandOver::Declined(reply) => JoinOutcome::Rejected { reply },
    };
    if let Err(e) = timers.resume(&records) {
        tracing::warn!(object = %live.key, error = %e, "timers did not resume after a Join that did not move");
    }
    Some(outcome)
}
