//! Answers to the requests a session relayed to one Actor reach its client in the order
//! the session relayed them. Each relayed request takes a turn in its Actor's line as it
//! is relayed (in lane order), and its answer is written only after the answer of the
//! turn before it, so replies that wake out of order cannot overtake each other. Lines of
//! different Actors are independent: a slow Actor holds up its own answers only.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::oneshot;

use super::packet::StreamCodec;
use crate::Result;

/// What answers one client request once: the session's reply token.
pub(crate) trait Answer: Send + 'static {
    /// Answers with the reply, or with the error's kind and message.
    fn answer(self, codec: StreamCodec, result: Result<Bytes>) -> impl Future<Output = ()> + Send;
}

/// One session's lines, one per Actor with answers on their way.
#[derive(Default)]
pub(crate) struct AnswerLines {
    lines: Mutex<HashMap<String, Line>>,
}

/// The last turn taken in one Actor's line.
struct Line {
    ticket: u64,
    written: oneshot::Receiver<()>,
}

impl AnswerLines {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Line>> {
        self.lines.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next turn in `actor`'s line.
    pub(crate) fn take_turn(self: &Arc<Self>, actor: &str) -> AnswerTurn {
        let (written_tx, written_rx) = oneshot::channel();
        let mut lines = self.lock();
        let ticket = lines
            .get(actor)
            .map_or(0, |line| line.ticket.wrapping_add(1));
        let previous = lines
            .insert(
                actor.to_string(),
                Line {
                    ticket,
                    written: written_rx,
                },
            )
            .map(|line| line.written);
        AnswerTurn {
            lines: self.clone(),
            actor: actor.to_string(),
            ticket,
            previous,
            written: Some(written_tx),
        }
    }

    /// Forgets `turn`'s line when no turn was taken after it.
    fn finished(&self, turn: &AnswerTurn) {
        let mut lines = self.lock();
        if lines.get(&turn.actor).map(|line| line.ticket) == Some(turn.ticket) {
            lines.remove(&turn.actor);
        }
    }
}

/// One request's place in its Actor's line.
pub(crate) struct AnswerTurn {
    lines: Arc<AnswerLines>,
    actor: String,
    ticket: u64,
    /// Resolves (or fails, its sender dropped) once the turn before was written.
    previous: Option<oneshot::Receiver<()>>,
    /// Dropped once this turn's answer is written: the next turn goes.
    written: Option<oneshot::Sender<()>>,
}

impl AnswerTurn {
    /// Whether the answers before this one are written already.
    fn is_first(&mut self) -> bool {
        match self.previous.as_mut().map(oneshot::Receiver::try_recv) {
            None | Some(Err(oneshot::error::TryRecvError::Closed)) | Some(Ok(())) => {
                self.previous = None;
                true
            }
            Some(Err(oneshot::error::TryRecvError::Empty)) => false,
        }
    }

    async fn wait(&mut self) {
        if let Some(previous) = self.previous.take() {
            let _ = previous.await;
        }
    }
}

/// A relayed request's reply token, with its turn in its Actor's line.
pub(crate) struct OrderedReply<T> {
    token: T,
    turn: AnswerTurn,
}

impl<T: Answer> OrderedReply<T> {
    pub(crate) fn new(token: T, turn: AnswerTurn) -> Self {
        OrderedReply { token, turn }
    }

    /// Answers with `result` in turn: now when the answers before it are written, else
    /// on a task of its own once they are.
    pub(crate) async fn answer_in_turn(mut self, codec: StreamCodec, result: Result<Bytes>) {
        if self.turn.is_first() {
            self.answer(codec, result).await;
        } else {
            tokio::spawn(self.answer(codec, result));
        }
    }

    /// Waits for the answers before this one, then answers with `result`.
    pub(crate) async fn answer(mut self, codec: StreamCodec, result: Result<Bytes>) {
        self.turn.wait().await;
        let OrderedReply { token, mut turn } = self;
        token.answer(codec, result).await;
        drop(turn.written.take());
        turn.lines.clone().finished(&turn);
    }
}
