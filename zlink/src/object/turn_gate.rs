//! Which execution gate the running turn holds, as the code it runs sees it: a request
//! from there to an object behind the same gate would wait for itself.
//!
//! A turn's future marks its gate for each of its polls and puts back what was marked
//! before, as a tokio task-local would, but with one word in a thread-local and a
//! compare: every local call reads it, and every turn sets it.

use std::cell::Cell;
use std::future::Future;
use std::sync::Arc;

thread_local! {
    /// The address of the gate the turn being polled on this thread holds (0: none).
    static HELD: Cell<usize> = const { Cell::new(0) };
}

fn address(gate: &Arc<Gate>) -> usize {
    Arc::as_ptr(gate) as usize
}

/// The execution gate: one turn at a time among the objects that share it (a SpotWide
/// Spot and its member Actors); every other object has a gate of its own.
pub(crate) type Gate = tokio::sync::Mutex<()>;

/// The gate a turn holds.
#[derive(Clone)]
pub(crate) enum TurnGate {
    /// An Actor's own gate, which no other object takes (its loop's turns are serial
    /// already): known by its address alone. The object owns it, and whatever drives the
    /// turn holds the object, so the address is not reused while the turn runs; no turn
    /// writes its reference count.
    Own(usize),
    /// A gate other objects take too (a Spot's own, which its SpotWide members share, or a
    /// SpotWide Spot's for a member): locked for the turn.
    Shared(Arc<Gate>),
}

impl TurnGate {
    /// `gate`, owned by the object alone.
    pub(crate) fn own(gate: &Arc<Gate>) -> Self {
        TurnGate::Own(address(gate))
    }

    fn address(&self) -> usize {
        match self {
            TurnGate::Own(address) => *address,
            TurnGate::Shared(gate) => address(gate),
        }
    }

    /// The gate to lock for the turn, if other objects take it too.
    pub(crate) fn shared(&self) -> Option<&Arc<Gate>> {
        match self {
            TurnGate::Own(_) => None,
            TurnGate::Shared(gate) => Some(gate),
        }
    }

    /// The shared gate, held once another object's turn behind it ended; `None` when it
    /// is not shared, or when `cancel` (this object's stop) fires first.
    pub(crate) async fn held_unless(
        &self,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Option<tokio::sync::OwnedMutexGuard<()>> {
        let shared = self.shared()?;
        tokio::select! {
            biased;
            _ = cancel.cancelled() => None,
            held = shared.clone().lock_owned() => Some(held),
        }
    }

    /// Whether the code running now is a turn behind this gate.
    pub(crate) fn held_here(&self) -> bool {
        HELD.with(Cell::get) == self.address()
    }
}

/// Runs `turn` holding `gate`: while it is polled, [`holds`] says so (a shared gate's
/// `Arc`, or the object that owns its own, keeps the address from being reused meanwhile).
pub(crate) async fn scope<F: Future>(gate: TurnGate, turn: F) -> F::Output {
    let held = gate.address();
    let mut turn = std::pin::pin!(turn);
    let output = std::future::poll_fn(move |cx| {
        let _marked = Marked::set(held);
        turn.as_mut().poll(cx)
    })
    .await;
    drop(gate);
    output
}

/// The mark of one poll, put back as it was when the poll ends (a panic included).
struct Marked {
    before: usize,
}

impl Marked {
    fn set(held: usize) -> Marked {
        Marked {
            before: HELD.with(|mark| mark.replace(held)),
        }
    }
}

impl Drop for Marked {
    fn drop(&mut self) {
        HELD.with(|mark| mark.set(self.before));
    }
}

/// Whether the code running now is inside a turn at all.
#[cfg(test)]
fn in_a_turn() -> bool {
    HELD.with(Cell::get) != 0
}

/// Whether the running turn holds `gate`.
#[cfg(test)]
fn holds(gate: &Arc<Gate>) -> bool {
    HELD.with(Cell::get) == address(gate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_turn_holds_its_gate_only_while_it_runs_and_nested_turns_put_it_back() {
        let (outer, inner) = (Arc::new(Gate::new(())), Arc::new(Gate::new(())));
        assert!(!in_a_turn());
        let seen = scope(TurnGate::Shared(outer.clone()), async {
            let before = (holds(&outer), holds(&inner));
            let nested = scope(TurnGate::Own(address(&inner)), async {
                (holds(&outer), holds(&inner))
            })
            .await;
            tokio::task::yield_now().await;
            (before, nested, holds(&outer), in_a_turn())
        })
        .await;
        assert_eq!(seen, ((true, false), (false, true), true, true));
        assert!(
            !in_a_turn() && !holds(&outer),
            "nothing is held after the turn"
        );
    }

    #[tokio::test]
    async fn a_task_polled_between_a_turns_polls_holds_nothing() {
        let gate = Arc::new(Gate::new(()));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let turn = tokio::spawn(scope(TurnGate::Shared(gate.clone()), async move {
            let _ = rx.await;
            in_a_turn()
        }));
        tokio::task::yield_now().await;
        assert!(!in_a_turn(), "another task while the turn waits");
        tx.send(()).unwrap();
        assert!(
            turn.await.unwrap(),
            "the turn holds it again when it runs on"
        );
    }

    #[test]
    fn a_panicking_turn_puts_the_mark_back() {
        let gate = Arc::new(Gate::new(()));
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            futures::executor::block_on(scope(TurnGate::Shared(gate.clone()), async {
                panic!("a handler")
            }))
        }));
        assert!(panicked.is_err());
        assert!(!in_a_turn());
    }

    #[tokio::test]
    async fn an_own_gate_is_held_by_its_address_as_a_shared_one_by_its_reference() {
        let gate = Arc::new(Gate::new(()));
        let (own, shared) = (TurnGate::own(&gate), TurnGate::Shared(gate.clone()));
        assert!(own.shared().is_none() && shared.shared().is_some());
        assert_eq!(Arc::strong_count(&gate), 2, "an own gate takes no count");
        assert!(!own.held_here() && !shared.held_here());
        let inside = scope(own.clone(), async { (own.held_here(), shared.held_here()) }).await;
        assert_eq!(inside, (true, true), "the same gate, however it is named");
        let other = Arc::new(Gate::new(()));
        let elsewhere = scope(TurnGate::own(&other), async { own.held_here() }).await;
        assert!(!elsewhere);
    }
}
