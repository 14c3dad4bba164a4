//! [`Call`]: the one shape of every call — a request or a one-way send to a channel, a node,
//! a Spot or an Actor. Made by the handles, awaited directly, optionally given a timeout
//! and metadata first:
//!
//! ```no_run
//! # #[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
//! # #[message(reply = Pong)]
//! # struct Ping;
//! # #[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
//! # struct Pong;
//! # async fn run(rt: zlink::Runtime) -> zlink::Result<()> {
//! use std::time::Duration;
//! let pong: Pong = rt.channels().request("ping", &Ping).await?;
//! let pong: Pong = rt
//!     .channels()
//!     .request("ping", &Ping)
//!     .timeout(Duration::from_secs(2))
//!     .metadata("trace-id", "abc")?
//!     .await?;
//! # Ok(()) }
//! ```

use std::borrow::Cow;
use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::ports::{ObjectMessage, ObjectPort, Started};
use super::Handle;
use crate::address::{ObjectKey, StableType};
use crate::call::PacketKind;
use crate::call::{BoxFuture, CallOptions};
use crate::mesh::MeshNode;
use crate::telemetry::{CallKind, CallTimer, Surface};
use crate::wire::trace_context::{stamp, TraceContext};
use crate::wire::{Message, Payload};
use crate::{Error, ErrorKind, Result};

/// The option setters every call shape has ([`Call`], and
/// [`Publish`](super::Publish)), over its `options: CallOptions` field; the caller gives
/// the timeout's doc, which differs per shape.
macro_rules! option_setters {
    ($(#[$timeout_doc:meta])*) => {
        $(#[$timeout_doc])*
        pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
            self.options = self.options.timeout(timeout);
            self
        }

        /// Adds a metadata entry (the last value for a key wins). Fails when the metadata
        /// would exceed 1024 bytes or the key is empty.
        pub fn metadata(
            mut self,
            key: impl Into<String>,
            value: impl Into<String>,
        ) -> crate::Result<Self> {
            self.options = self.options.metadata(key, value)?;
            Ok(self)
        }

        /// Replaces the metadata.
        pub fn with_metadata(mut self, metadata: crate::wire::Metadata) -> Self {
            self.options = self.options.with_metadata(metadata);
            self
        }

        /// Replaces timeout and metadata with `options`.
        pub fn options(mut self, options: crate::call::CallOptions) -> Self {
            self.options = options;
            self
        }
    };
}
pub(super) use option_setters;

mod sealed {
    pub trait Sealed {}
    pub trait SealedFor<M> {}
}

/// What a [`Call`] waits for: the reply of a request ([`Reply`]) or nothing ([`OneWay`]).
/// Sealed.
pub trait Expect: sealed::Sealed + Send + 'static {
    /// What awaiting the call yields.
    type Output;
    #[doc(hidden)]
    const KIND: PacketKind;
    #[doc(hidden)]
    fn finish(reply: Payload) -> Result<Self::Output>;
}

/// A request's call: awaiting it yields the reply `T`.
pub struct Reply<T>(PhantomData<fn() -> T>);

/// A one-way send's call: awaiting it yields `()` once the message is accepted.
pub struct OneWay;

impl<T> sealed::Sealed for Reply<T> {}
impl sealed::Sealed for OneWay {}

impl<T: Message> Expect for Reply<T> {
    type Output = T;
    const KIND: PacketKind = PacketKind::Request;
    fn finish(reply: Payload) -> Result<T> {
        reply.into_message()
    }
}

impl Expect for OneWay {
    type Output = ();
    const KIND: PacketKind = PacketKind::Send;
    fn finish(_: Payload) -> Result<()> {
        Ok(())
    }
}

/// A message as a generated Spot or Actor client takes it: by reference (encoded at once)
/// or by value. A value goes to a handler on the same node as it is, with no encoding
/// (when its codec [hands values over](crate::Codec::HANDS_OVER)); to another node it is
/// encoded as a reference would be.
pub trait Outgoing<M: Message>: sealed::SealedFor<M> {
    #[doc(hidden)]
    fn into_payload(self) -> Result<Payload>;
}

impl<M: Message> sealed::SealedFor<M> for &M {}
impl<M: Message> Outgoing<M> for &M {
    fn into_payload(self) -> Result<Payload> {
        self.encode().map(Payload::encoded)
    }
}

impl<M: Message> sealed::SealedFor<M> for M {}
impl<M: Message> Outgoing<M> for M {
    fn into_payload(self) -> Result<Payload> {
        Payload::of(self)
    }
}

/// Where a call goes.
pub(crate) enum Target<'a> {
    Channel(&'a str),
    Node(&'a str),
    Object(Cow<'a, ObjectKey>),
}

/// One call, ready to go: `.await` it, or first set its [`timeout`](Self::timeout) and
/// [`metadata`](Self::metadata).
///
/// A request has exactly one terminal result: its reply, an error reply,
/// `DeadlineExceeded` (the one timeout covers the whole call), `Unavailable` or
/// `ShuttingDown`; dropping the future cancels it. A send completes when the local queue
/// (or, for a Spot or Actor, the owner's mailbox) accepts it, waiting at most its timeout
/// for room.
#[must_use = "a call does nothing until it is awaited"]
pub struct Call<'a, E: Expect> {
    handle: &'a Handle,
    target: Result<Target<'a>>,
    packet: &'static str,
    payload: Result<Payload>,
    options: CallOptions,
    /// Instance intent: the Instance Spot type a Missing Spot ID is activated as.
    intent: Option<Result<Intent>>,
    expect: PhantomData<fn() -> E>,
}

impl<'a, E: Expect> Call<'a, E> {
    pub(crate) fn new<M: Message>(
        handle: &'a Handle,
        target: Result<Target<'a>>,
        message: &M,
    ) -> Self {
        Call::of_payload::<M>(handle, target, message.encode().map(Payload::encoded))
    }

    /// A call carrying `payload`, the message `M` as the caller gave it.
    pub(crate) fn of_payload<M: Message>(
        handle: &'a Handle,
        target: Result<Target<'a>>,
        payload: Result<Payload>,
    ) -> Self {
        Call {
            handle,
            target,
            packet: M::PACKET_NAME,
            payload,
            options: CallOptions::default(),
            intent: None,
            expect: PhantomData,
        }
    }

    /// Gives the call Instance intent (seed 002 §4.3): when the Spot ID has no Spot, a
    /// Spot of the Instance Spot type `stable_type` is activated on a node serving it, and
    /// this call's message is its first handler call. A Spot that exists takes the call as
    /// any call, if it is an Instance Spot of that type (anything else is
    /// `TypeMismatch`). An owner that died is `Unavailable`, never a new activation.
    /// Generated Spot clients made with `Client::instance(handle, id)` set it on every
    /// call. Set twice, or on a call that is not to a Spot, the call fails
    /// `InvalidOperation`.
    pub fn instance(self, stable_type: &str) -> Self {
        let named = StableType::new(stable_type)
            .map(Intent::Named)
            .map_err(|e| crate::Error::InvalidArgument(e.to_string()));
        self.with_intent(named)
    }

    /// Gives the call Instance intent like [`instance`](Self::instance), for the one
    /// Instance Spot type the mesh serves: the distinct Instance Spot types of this node
    /// and its connected members, as their descriptors publish them. With two or more the
    /// call fails `InvalidOperation` (name the type), with none `NotFound`; either way
    /// nothing is sent.
    pub fn instance_any(self) -> Self {
        self.with_intent(Ok(Intent::SoleType))
    }

    fn with_intent(mut self, intent: Result<Intent>) -> Self {
        self.intent = Some(match self.intent {
            None => intent,
            Some(_) => Err(Error::new(
                ErrorKind::InvalidOperation,
                "a call's Instance intent is set once",
            )),
        });
        self
    }

    option_setters!(
        /// For a request, the one deadline of the whole call (default: the runtime's request
        /// timeout, 30 s). For a send, the longest wait for room in the queue (default: the
        /// send timeout, 1 s).
    );
}

impl<'a, E: Expect> IntoFuture for Call<'a, E> {
    type Output = Result<E::Output>;
    type IntoFuture = CallFuture<'a, E>;

    fn into_future(self) -> CallFuture<'a, E> {
        let Call {
            handle,
            target,
            packet,
            payload,
            mut options,
            intent,
            ..
        } = self;
        let surface = surface_of(&target, intent.is_some());
        let timer = handle.node().instruments().calls.as_ref().map(|calls| {
            let kind = match E::KIND {
                PacketKind::Request => CallKind::Request,
                PacketKind::Send => CallKind::Send,
            };
            Box::new(calls.start(surface, kind))
        });
        let span = call_span(handle, surface, packet);
        let propagation = handle.node().settings().trace_propagation.as_deref();
        match &span {
            Some(span) => span.in_scope(|| {
                stamp(&mut options.metadata, propagation);
                if let Some(context) = TraceContext::of(&options.metadata) {
                    span.record("trace_id", context.trace_id().unwrap_or("malformed"));
                }
            }),
            None => stamp(&mut options.metadata, propagation),
        }
        let started = target.and_then(|target| {
            let payload = payload?;
            let intent = intent.transpose()?;
            start(handle, target, E::KIND, packet, payload, options, intent)
        });
        CallFuture {
            state: match started {
                Ok(started) => started,
                Err(error) => State::Failed(Some(error)),
            },
            timer,
            span,
            expect: PhantomData,
        }
    }
}

/// The `zlink.call` span of a call from `handle`'s node, when a subscriber wants it
/// (boxed: without one the call carries one word for it).
fn call_span(
    handle: &Handle,
    surface: Surface,
    packet: &'static str,
) -> Option<Box<tracing::Span>> {
    if !crate::mesh::traced::spans_wanted() {
        return None;
    }
    let identity = handle.node().identity();
    let span = tracing::debug_span!(
        "zlink.call",
        mesh = identity.mesh_name(),
        rid = identity.rid(),
        surface = surface.as_str(),
        packet,
        trace_id = tracing::field::Empty,
    );
    (!span.is_disabled()).then(|| Box::new(span))
}

/// What a call to `target` addresses, for its metrics.
fn surface_of(target: &Result<Target<'_>>, intent: bool) -> Surface {
    match target {
        Ok(Target::Channel(_)) | Err(_) => Surface::Channel,
        Ok(Target::Node(_)) => Surface::Node,
        Ok(Target::Object(_)) if intent => Surface::InstanceSpot,
        Ok(Target::Object(key)) => match key.kind {
            crate::address::ObjectKind::Spot => Surface::Spot,
            crate::address::ObjectKind::Actor => Surface::Actor,
        },
    }
}

/// The Instance intent a call was given.
enum Intent {
    /// For this Instance Spot type.
    Named(StableType),
    /// For the one Instance Spot type the mesh serves.
    SoleType,
}

/// What a started call runs: one boxed future through whichever subsystem serves the
/// target; a call to a Spot or Actor starts at its first poll, and may finish there.
fn start<'a>(
    handle: &'a Handle,
    target: Target<'a>,
    kind: PacketKind,
    packet: &'static str,
    payload: Payload,
    options: CallOptions,
    intent: Option<Intent>,
) -> Result<State<'a>> {
    let expects_reply = kind == PacketKind::Request;
    let spot =
        matches!(&target, Target::Object(key) if key.kind == crate::address::ObjectKind::Spot);
    if intent.is_some() && !spot {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            "Instance intent goes only on a call to a Spot by ID",
        ));
    }
    Ok(State::Running(match target {
        Target::Channel(channel) => {
            let node = handle.channels().calling_node(channel)?;
            let payload = payload.into_bytes()?;
            Box::pin(async move {
                node.calls()
                    .call_channel(channel, expects_reply, packet, payload, &options)
                    .await
                    .map(Payload::encoded)
            })
        }
        Target::Node(rid) => {
            let node: Arc<MeshNode> = handle.node().clone();
            let payload = payload.into_bytes()?;
            Box::pin(async move {
                node.calls()
                    .call_node(rid, expects_reply, packet, payload, &options)
                    .await
                    .map(Payload::encoded)
            })
        }
        Target::Object(key) => {
            let settings = handle.node().settings();
            let (timeout, send_timeout) = match kind {
                PacketKind::Request => (
                    options.timeout.unwrap_or(settings.request_timeout),
                    settings.send_timeout,
                ),
                PacketKind::Send => {
                    let send = options.timeout.unwrap_or(settings.send_timeout);
                    (send, send)
                }
            };
            let objects = handle.objects()?.as_ref();
            let intent = match intent {
                None => None,
                Some(Intent::Named(stable_type)) => Some(stable_type),
                Some(Intent::SoleType) => Some(objects.sole_instance_type()?),
            };
            return Ok(State::Object(
                objects,
                Some(ObjectMessage {
                    key,
                    packet,
                    payload,
                    metadata: options.metadata,
                    kind,
                    timeout,
                    send_timeout,
                    intent,
                }),
            ));
        }
    }))
}

/// The future of an awaited [`Call`].
#[must_use = "futures do nothing unless polled"]
pub struct CallFuture<'a, E: Expect> {
    state: State<'a>,
    /// Its metrics, when a recorder is installed: ended with its result, or dropped as
    /// cancelled.
    /// (Boxed: without a recorder the future carries one word for it.)
    timer: Option<Box<CallTimer<'a>>>,
    /// Its span, when a subscriber wants it.
    span: Option<Box<tracing::Span>>,
    expect: PhantomData<fn() -> E>,
}

/// Where an awaited call stands.
enum State<'a> {
    /// A call to a Spot or Actor, not yet started (taken at the first poll).
    Object(&'a dyn ObjectPort, Option<ObjectMessage<'a>>),
    Running(BoxFuture<'a, Result<Payload>>),
    /// It could not start; the error is taken by the poll that reports it.
    Failed(Option<Error>),
}

impl<E: Expect> Future for CallFuture<'_, E> {
    type Output = Result<E::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let _in_span = this.span.as_ref().map(|span| span.enter());
        let polled = poll_state::<E>(&mut this.state, cx);
        if let (Poll::Ready(result), Some(timer)) = (&polled, &mut this.timer) {
            timer.end(result);
        }
        polled
    }
}

/// Drives `state` one step.
#[inline]
fn poll_state<E: Expect>(state: &mut State<'_>, cx: &mut Context<'_>) -> Poll<Result<E::Output>> {
    if let State::Object(port, message) = state {
        // A call whose turn runs on this task waits on nothing, so it spends its
        // task's budget here, as any use of a tokio resource would: a task that only
        // meets idle objects still steps aside now and then.
        let Poll::Ready(budget) = tokio::task::coop::poll_proceed(cx) else {
            return Poll::Pending;
        };
        budget.made_progress();
        let Some(message) = message.take() else {
            return Poll::Ready(Err(polled_after_completion()));
        };
        match port.start_object_call(message) {
            Started::Done(result) => {
                *state = State::Failed(None);
                return Poll::Ready(result.and_then(E::finish));
            }
            Started::Running(running) => *state = State::Running(running),
        }
    }
    match state {
        State::Running(running) => running.as_mut().poll(cx).map(|r| r.and_then(E::finish)),
        State::Failed(failed) => {
            Poll::Ready(Err(failed.take().unwrap_or_else(polled_after_completion)))
        }
        State::Object(..) => Poll::Ready(Err(polled_after_completion())),
    }
}

fn polled_after_completion() -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        "a call future polled after it completed",
    )
}
