//! The state adapter of a type declared `relocation = preserve`: how an object's own state
//! crosses to the node it moves to.

use crate::Result;

/// The most bytes one object's captured state may take.
pub const MAX_CAPTURED_STATE_BYTES: usize = 64 * 1024 * 1024;

/// Captures an object's state on the node it leaves and restores it into a fresh
/// instance on the node it moves to ([`Relocation::Preserve`](crate::object::Relocation)).
///
/// The bytes are the application's own format: the framework carries them without
/// reading them (version them yourself if a rolling update can move an object between
/// two builds). An empty capture is a valid state. [`capture`](Self::capture) runs at a
/// handler boundary, after the last handler before the move and before any later one; it
/// must not exceed [`MAX_CAPTURED_STATE_BYTES`]. [`restore`](Self::restore) runs on the
/// target, on the instance the type's factory just made, before that object's first
/// message there. An `Err` from either cancels the move while it still can be: the object
/// keeps running where it was.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is declared `relocation = preserve` but has no state adapter",
    label = "needs `impl zlink::object::RelocationState for {Self}`",
    note = "implement `capture` (state to bytes) and `restore` (bytes into a fresh instance), or declare `relocation = recreate`"
)]
pub trait RelocationState: Send {
    /// This object's state, as bytes to restore elsewhere.
    fn capture(&self) -> Result<Vec<u8>>;

    /// Takes the state [`capture`](Self::capture) produced on the node the object left.
    fn restore(&mut self, state: &[u8]) -> Result<()>;
}
