//! What a move checks on the source before anything stops: the object may move, its type
//! allows it, and a target is chosen.

use crate::address::{ObjectKey, ObjectKind};
use crate::object::lifecycle::Relocation;
use crate::object::live_object::LiveObject;
use crate::object::relocation::Moving;
use crate::{Error, ErrorKind, Result};

/// The record code of `key`'s namespace.
pub(crate) fn kind_code(key: &ObjectKey) -> char {
    match key.kind {
        ObjectKind::Actor => 'a',
        ObjectKind::Spot => 's',
    }
}

/// What may move by itself: not an Entry Spot, not a type declared `disable`, not an
/// Actor of a User Spot (it moves with its Spot).
pub(super) fn check_movable(live: &LiveObject) -> Result<()> {
    if live.is_entry() {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("{} is an Entry Spot: it stays with its node", live.key),
        ));
    }
    relocatable_type(live)?;
    if live
        .membership()
        .is_some_and(|spot| !crate::object::is_entry_spot_id(spot.as_str()))
    {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "{} belongs to a User Spot: it moves with its Spot, or after joining an Entry Spot",
                live.key
            ),
        ));
    }
    Ok(())
}

/// `Rejected` for an object whose type is declared `relocation = disable`: it never
/// moves, and asking stops nothing.
pub(crate) fn relocatable_type(live: &LiveObject) -> Result<()> {
    if live.object_type.relocation == Relocation::Disable {
        return Err(Error::new(ErrorKind::Rejected, disabled_type(live)));
    }
    Ok(())
}

/// Why `live` may not move: its type is declared `relocation = disable`.
pub(crate) fn disabled_type(live: &LiveObject) -> String {
    format!(
        "{} is of type {}, declared relocation = disable",
        live.key, live.object_type.stable_type
    )
}

/// The named node, or the one placement picks among the others serving the type.
pub(crate) fn choose_target(
    server: &Moving,
    live: &LiveObject,
    to: Option<&str>,
) -> Result<String> {
    if to == Some(server.env.route().rid.as_str()) {
        return Err(Error::InvalidArgument(format!(
            "{} runs on {} already",
            live.key,
            server.env.route().rid
        )));
    }
    let candidates = crate::object::creation::candidates(
        server,
        live.key.kind,
        live.object_type.stable_type.as_str(),
    );
    let others: Vec<_> = candidates.into_iter().filter(|c| !c.local).collect();
    match to {
        Some(rid) if others.iter().any(|c| c.rid == rid) => Ok(rid.to_string()),
        Some(rid) => Err(Error::new(
            ErrorKind::NotFound,
            format!(
                "node {rid} is not a known Object Server of {}",
                live.object_type.stable_type
            ),
        )),
        None => crate::object::placement::pick(&others, &[])
            .map(|c| c.rid.clone())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Unavailable,
                    format!(
                        "no other node serves {} to move {} to",
                        live.object_type.stable_type, live.key
                    ),
                )
            }),
    }
}
