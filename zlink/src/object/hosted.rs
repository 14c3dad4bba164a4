//! [`HostedObjects`]: the Spots and Actors one node runs now, listed for its operators a
//! page at a time (which node hosts which objects, without reading the Location Store).

use serde::Serialize;

use super::live_object::LiveObject;
use crate::address::ObjectKind;

/// The most objects one page lists.
pub const MAX_HOSTED_PAGE: usize = 1000;

/// One Spot or Actor a node runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostedObject {
    /// `true` for a Spot, `false` for an Actor.
    pub is_spot: bool,
    /// Its ID.
    pub id: String,
    /// Its ObjectGeneration.
    pub generation: u64,
    /// Its type's stable name.
    pub stable_type: String,
}

/// One page of the objects a node runs (its Entry Spot aside): Actors first, then Spots,
/// each kind by ID.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostedObjects {
    /// This page.
    pub objects: Vec<HostedObject>,
    /// Where the next page starts (pass it as `after`); `None` on the last page.
    pub next: Option<String>,
}

/// The page of `live` after the cursor `after`, of at most `limit` objects (1 to
/// [`MAX_HOSTED_PAGE`]).
pub(crate) fn page(
    live: Vec<std::sync::Arc<LiveObject>>,
    after: Option<&str>,
    limit: usize,
) -> HostedObjects {
    let limit = limit.clamp(1, MAX_HOSTED_PAGE);
    let mut objects: Vec<(String, HostedObject)> = live
        .iter()
        .filter(|live| !live.is_entry())
        .map(|live| {
            let is_spot = live.key.kind == ObjectKind::Spot;
            let object = HostedObject {
                is_spot,
                id: live.key.id.to_string(),
                generation: live.generation(),
                stable_type: live.object_type.stable_type.to_string(),
            };
            (cursor_of(is_spot, &object.id), object)
        })
        .filter(|(cursor, _)| after.is_none_or(|after| cursor.as_str() > after))
        .collect();
    objects.sort_by(|a, b| a.0.cmp(&b.0));
    let more = objects.len() > limit;
    objects.truncate(limit);
    let next = more
        .then(|| objects.last().map(|(cursor, _)| cursor.clone()))
        .flatten();
    HostedObjects {
        objects: objects.into_iter().map(|(_, object)| object).collect(),
        next,
    }
}

/// The cursor of one object: its kind (`a`, then `s`) and its ID, so the order is Actors
/// first, then Spots, each by ID.
fn cursor_of(is_spot: bool, id: &str) -> String {
    format!("{}:{id}", if is_spot { 's' } else { 'a' })
}
