//! Which execution gate the running turn holds, as the code it runs sees it: a request
//! from there to an object behind the same gate would wait for itself.
//!
//! A turn's future marks its gate for each of its polls and puts back what was marked
//! before, as a tokio task-local would, but with one word in a thread-local and a
//! compare: every local call reads it, and every turn sets it.

use std::cell::Cell;
use std::future::Future;
use std::sync::Arc;

use super::live_object::Gate;

thread_local! {
    /// The address of the gate the turn being polled on this thread holds (0: none).
    static HELD: Cell<usize> = const { Cell::new(0) };
}

fn address(gate: &Arc<Gate>) -> usize {
    Arc::as_ptr(gate) as usize
}

/// Runs `turn` holding `gate`: while it is polled, [`holds`] says so (the `Arc` keeps
/// the address from being reused meanwhile).
pub(crate) async fn scope<F: Future>(gate: Arc<Gate>, turn: F) -> F::Output {
    let held = address(&gate);
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
pub(crate) fn in_a_turn() -> bool {
    HELD.with(Cell::get) != 0
}

/// Whether the running turn holds `gate`.
pub(crate) fn holds(gate: &Arc<Gate>) -> bool {
    HELD.with(Cell::get) == address(gate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_turn_holds_its_gate_only_while_it_runs_and_nested_turns_put_it_back() {
        let (outer, inner) = (Arc::new(Gate::new(())), Arc::new(Gate::new(())));
        assert!(!in_a_turn());
        let seen = scope(outer.clone(), async {
            let before = (holds(&outer), holds(&inner));
            let nested = scope(inner.clone(), async { (holds(&outer), holds(&inner)) }).await;
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
        let turn = tokio::spawn(scope(gate.clone(), async move {
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
            futures::executor::block_on(scope(gate.clone(), async { panic!("a handler") }))
        }));
        assert!(panicked.is_err());
        assert!(!in_a_turn());
    }
}
