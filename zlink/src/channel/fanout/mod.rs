//! Classic fanout: a publisher opens one PUB listener; subscribers keep one SUB socket per
//! publisher and receive the events of the topics they filter on. Lossy by design: a
//! subscriber whose queue is at the SendHighWaterMark loses its copy while everyone else
//! gets theirs; with NoDrop, publish waits for room instead and fails `DeadlineExceeded`
//! at its deadline.
//!
//! ```no_run
//! # use zlink::{Fanout, Handlers, Runtime};
//! # async fn run(handlers: Handlers) -> zlink::Result<()> {
//! let publisher = Runtime::builder()
//!     .mesh_name("shop")
//!     .listen("tcp://127.0.0.1:0")
//!     .fanout(Fanout::publisher("prices").listen("tcp://127.0.0.1:7100"))
//!     .build()?
//!     .start()
//!     .await?;
//! let subscriber = Runtime::builder()
//!     .mesh_name("shop")
//!     .listen("tcp://127.0.0.1:0")
//!     .fanout(Fanout::subscriber("prices", handlers).connect("tcp://127.0.0.1:7100"))
//!     .build()?
//!     .start()
//!     .await?;
//! # Ok(()) }
//! ```

pub(crate) mod publisher;
pub(crate) mod record;
mod roles;
mod subscriber;

use std::sync::Arc;

pub use self::record::{BEACON_PAYLOAD, BEACON_TOPIC};
pub use crate::handle::PublisherStatus;
pub(crate) use publisher::FanoutPublisher;
pub(crate) use roles::FanoutRoles;
pub(crate) use subscriber::FanoutSubscriber;

use crate::handler::HandlerGroup;

/// Default SendHighWaterMark: records queued per subscriber before copies are dropped.
pub const DEFAULT_SEND_HIGH_WATER_MARK: usize = 1000;
/// Default cap on connected subscribers of one publisher; more are refused at accept.
pub const DEFAULT_MAX_SUBSCRIBERS: usize = 1024;
/// Default cap on distinct topics one subscriber may subscribe to; a subscriber asking
/// for more is disconnected.
pub const DEFAULT_MAX_SUBSCRIPTIONS: usize = 256;

/// Entry points for declaring fanout roles.
pub struct Fanout;

impl Fanout {
    /// The publisher of `channel`.
    pub fn publisher(channel: impl Into<String>) -> FanoutPublisherSpec {
        FanoutPublisherSpec {
            channel: channel.into(),
            listen: "tcp://127.0.0.1:0".into(),
            advertise_host: None,
            high_water_mark: DEFAULT_SEND_HIGH_WATER_MARK,
            no_drop: false,
            max_subscribers: DEFAULT_MAX_SUBSCRIBERS,
            max_subscriptions: DEFAULT_MAX_SUBSCRIPTIONS,
        }
    }

    /// A subscriber of `channel` whose events go to `handlers` (send handlers, by packet
    /// name). Without [`topic`](FanoutSubscriberSpec::topic) it subscribes to the packet
    /// names the group handles.
    pub fn subscriber(
        channel: impl Into<String>,
        handlers: impl HandlerGroup,
    ) -> FanoutSubscriberSpec {
        FanoutSubscriberSpec {
            channel: channel.into(),
            handlers: Arc::new(handlers),
            connect: Vec::new(),
            automatic: false,
            topics: Vec::new(),
        }
    }
}

/// A fanout publisher registration.
#[derive(Clone)]
pub struct FanoutPublisherSpec {
    pub(crate) channel: String,
    pub(crate) listen: String,
    pub(crate) advertise_host: Option<String>,
    pub(crate) high_water_mark: usize,
    pub(crate) no_drop: bool,
    pub(crate) max_subscribers: usize,
    pub(crate) max_subscriptions: usize,
}

impl FanoutPublisherSpec {
    /// The host subscribers dial (the bound port is kept); required when `listen` binds a
    /// wildcard such as `0.0.0.0`.
    pub fn advertise_host(mut self, host: impl Into<String>) -> Self {
        self.advertise_host = Some(host.into());
        self
    }

    /// Where the PUB listener binds (default `tcp://127.0.0.1:0`; the real port is used).
    pub fn listen(mut self, endpoint: impl Into<String>) -> Self {
        self.listen = endpoint.into();
        self
    }

    /// Records queued per subscriber before further copies for it are dropped (default
    /// 1000, at least 1).
    pub fn send_high_water_mark(mut self, records: usize) -> Self {
        self.high_water_mark = records;
        self
    }

    /// Most subscribers connected at once (default 1024, at least 1); more are refused at
    /// accept.
    pub fn max_subscribers(mut self, subscribers: usize) -> Self {
        self.max_subscribers = subscribers;
        self
    }

    /// Most distinct topics one subscriber may hold (default 256, at least 1). Duplicate
    /// subscriptions collapse into one; a subscriber asking for more is disconnected.
    pub fn max_subscriptions(mut self, topics: usize) -> Self {
        self.max_subscriptions = topics;
        self
    }

    /// Never drop: publish waits until every subscriber of the topic has room, and fails
    /// `DeadlineExceeded` at its deadline (the send timeout, or the call's). One slow
    /// subscriber then holds back every publish of its topics.
    pub fn no_drop(mut self) -> Self {
        self.no_drop = true;
        self
    }
}

/// A fanout subscriber registration.
#[derive(Clone)]
pub struct FanoutSubscriberSpec {
    pub(crate) channel: String,
    pub(crate) handlers: Arc<dyn HandlerGroup>,
    pub(crate) connect: Vec<(String, Option<crate::link::CurvePublicKey>)>,
    pub(crate) automatic: bool,
    pub(crate) topics: Vec<String>,
}

impl FanoutSubscriberSpec {
    /// Subscribes to the publisher at `endpoint` (manual; repeatable).
    pub fn connect(mut self, endpoint: impl Into<String>) -> Self {
        self.connect.push((endpoint.into(), None));
        self
    }

    /// Subscribes to the CURVE publisher at `endpoint`, which must prove it holds `key`
    /// (manual; repeatable). Needs [`RuntimeBuilder::curve`](crate::RuntimeBuilder::curve).
    pub fn connect_curve(
        mut self,
        endpoint: impl Into<String>,
        key: crate::link::CurvePublicKey,
    ) -> Self {
        self.connect.push((endpoint.into(), Some(key)));
        self
    }

    /// Finds the channel's publishers through the Location Store. Not combinable with
    /// [`connect`](Self::connect).
    pub fn discover(mut self) -> Self {
        self.automatic = true;
        self
    }

    /// Receives only events whose topic starts with `prefix` (repeatable; `""` is
    /// everything).
    pub fn topic(mut self, prefix: impl Into<String>) -> Self {
        self.topics.push(prefix.into());
        self
    }
}

/// A fanout role, as [`RuntimeBuilder::fanout`](crate::RuntimeBuilder::fanout) takes it.
#[derive(Clone)]
pub enum FanoutDeclaration {
    /// A publisher.
    Publisher(FanoutPublisherSpec),
    /// A subscriber.
    Subscriber(FanoutSubscriberSpec),
}

impl FanoutDeclaration {
    pub(crate) fn channel(&self) -> &str {
        match self {
            FanoutDeclaration::Publisher(p) => &p.channel,
            FanoutDeclaration::Subscriber(s) => &s.channel,
        }
    }
}

impl From<FanoutPublisherSpec> for FanoutDeclaration {
    fn from(p: FanoutPublisherSpec) -> Self {
        FanoutDeclaration::Publisher(p)
    }
}

impl From<FanoutSubscriberSpec> for FanoutDeclaration {
    fn from(s: FanoutSubscriberSpec) -> Self {
        FanoutDeclaration::Subscriber(s)
    }
}
