//! Command numbers. They follow the reference service wire so the specification reads
//! against ours; unused numbers stay reserved.

/// One envelope command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Command {
    /// Initiator's admission record.
    Hello = 1,
    /// Acceptor's admission record: the connection is ready.
    Admit = 2,
    /// Admission refused, with a reason.
    Reject = 3,
    /// A newer admission snapshot (weights) on an admitted connection.
    Update = 4,
    /// Liveness probe carrying a probe id.
    LivenessProbe = 5,
    /// Echo of a probe id.
    LivenessAck = 6,
    /// One-way message to a node.
    NodeSend = 16,
    /// Request to a node.
    NodeRequest = 17,
    /// One-way message on a channel.
    ChannelSend = 18,
    /// Request on a channel.
    ChannelRequest = 19,
    /// Terminal reply to a request.
    Reply = 20,
    /// One-way message to a Spot, by ID, with the route fence the sender resolved.
    SpotSend = 21,
    /// Request to a Spot, by ID, with the route fence the sender resolved.
    SpotRequest = 22,
    /// One-way message to an Actor, by ID, with the route fence the sender resolved.
    ActorSend = 24,
    /// Request to an Actor, by ID, with the route fence the sender resolved.
    ActorRequest = 25,
    /// Destroy one incarnation of an Actor on its owner (target: the Actor ID, with the
    /// route fence; payload: the ObjectGeneration).
    ActorDestroy = 27,
    /// Relocation, source to target: the moving object's state and timers (target: the
    /// object ID; payload: the restore record). The reply is relay-ready: the target
    /// registered the object's temporary queue and built its instance.
    RelocationRestore = 31,
    /// Relocation, source to target, after the relayed prefix: commit the move now (the
    /// target commits 1000 ms after relay-ready otherwise). The reply says whether the
    /// owner change committed.
    RelocationCutover = 32,
    /// Relocation, source to target: answered at once, so its reply proves that everything
    /// sent before it on the connection was admitted.
    RelocationBarrier = 33,
    /// An Actor's push to the session bound to it, to the session owner (target: the
    /// Actor ID; payload: the push record with the binding identity it was sent under).
    BoundSessionSend = 36,
    /// A session binds to an Actor, to the Actor's owner (target: the Actor ID; payload:
    /// the bind record). The reply carries the binding generation and the owner fence.
    BoundSessionBind = 38,
    /// Relocation, source to session owner: hold what the session relays to the moving
    /// Actor (target: the Actor ID; payload: the seal record). The reply means sealed.
    SessionRelocationSeal = 42,
    /// Relocation, to the session owner, one-way and never resent: the sealed binding's
    /// route moves to the target (commit, from the target once it dispatches) or stays
    /// (abort, from the source); the session submits what it held.
    SessionRelocationRoute = 44,
    /// Logical Multicast: one event for the Spots of the receiving node that subscribe to
    /// its topic (target: the ChannelName; packet: the event's packet name; the head ends
    /// with the topic). A one-way, once per receiving node.
    LogicalMulticast = 23,
    /// Activate an Instance Spot on the node placement picked (target: the Spot ID;
    /// packet: its stable type; payload: the activation envelope, the first message). A
    /// request on the wire; the caller of a one-way does not wait for its answer.
    InstanceSpot = 39,
    /// A classic fanout event (on a PUB/SUB pair, after the topic frame).
    FanoutEvent = 40,
    /// Create a User Spot on the node chosen by placement (target: the Spot ID; packet: the
    /// stable type; payload: the creation request).
    SpotCreate = 47,
    /// Close one incarnation of a Spot on its owner (target: the Spot ID, with the route
    /// fence; payload: the ObjectGeneration).
    SpotClose = 48,
    /// Create an Actor on the node chosen by placement, in its Entry Spot (target: the
    /// Actor ID; packet: the stable type).
    ActorCreate = 49,
    /// One-way notice to the original sender of a relayed message: the object moved, from
    /// the source route to the target route (payload: the notice record).
    MessageFollow = 50,
    /// One-way from an Actor's owner to the session its binding moved away from (target:
    /// the Actor ID; payload: the retired binding).
    BoundSessionReplaced = 51,
    /// One-way from a bound Actor's owner to the node its Spot runs on, when that is
    /// another node: the session bound to the Actor ended (target: the Spot ID; payload:
    /// the Actor). Sent once per ended binding, never resent.
    SpotMemberDisconnected = 52,
    /// To the node whose creation of an object is under way (target: the object ID;
    /// payload: the ObjectGeneration of its Creating record, 8 bytes): answered once that
    /// creation ended, or at once (`false`) when none of that generation runs there. A
    /// caller that lost an Instance Spot's activation race waits on it instead of polling
    /// the store.
    CreationSettled = 53,
}

impl Command {
    /// The command for a wire number, if it is one we speak.
    pub fn from_code(code: u8) -> Option<Command> {
        Some(match code {
            1 => Command::Hello,
            2 => Command::Admit,
            3 => Command::Reject,
            4 => Command::Update,
            5 => Command::LivenessProbe,
            6 => Command::LivenessAck,
            16 => Command::NodeSend,
            17 => Command::NodeRequest,
            18 => Command::ChannelSend,
            19 => Command::ChannelRequest,
            20 => Command::Reply,
            21 => Command::SpotSend,
            22 => Command::SpotRequest,
            23 => Command::LogicalMulticast,
            24 => Command::ActorSend,
            25 => Command::ActorRequest,
            27 => Command::ActorDestroy,
            31 => Command::RelocationRestore,
            32 => Command::RelocationCutover,
            33 => Command::RelocationBarrier,
            39 => Command::InstanceSpot,
            40 => Command::FanoutEvent,
            47 => Command::SpotCreate,
            48 => Command::SpotClose,
            49 => Command::ActorCreate,
            50 => Command::MessageFollow,
            36 => Command::BoundSessionSend,
            38 => Command::BoundSessionBind,
            51 => Command::BoundSessionReplaced,
            52 => Command::SpotMemberDisconnected,
            53 => Command::CreationSettled,
            42 => Command::SessionRelocationSeal,
            44 => Command::SessionRelocationRoute,
            _ => return None,
        })
    }

    /// Whether the command carries application data (and so may carry metadata).
    pub fn is_application(self) -> bool {
        matches!(
            self,
            Command::NodeSend
                | Command::NodeRequest
                | Command::ChannelSend
                | Command::ChannelRequest
                | Command::SpotSend
                | Command::SpotRequest
                | Command::ActorSend
                | Command::ActorRequest
                | Command::FanoutEvent
                | Command::LogicalMulticast
                | Command::SpotCreate
                | Command::SpotClose
                | Command::ActorCreate
                | Command::ActorDestroy
                | Command::InstanceSpot
                | Command::RelocationRestore
                | Command::RelocationCutover
                | Command::RelocationBarrier
                | Command::MessageFollow
                | Command::BoundSessionSend
                | Command::BoundSessionBind
                | Command::BoundSessionReplaced
                | Command::SpotMemberDisconnected
                | Command::CreationSettled
                | Command::SessionRelocationSeal
                | Command::SessionRelocationRoute
        )
    }

    /// Whether the command addresses a Spot or Actor by ID (its head carries the ID and a
    /// route fence).
    pub fn is_object(self) -> bool {
        matches!(
            self,
            Command::SpotSend
                | Command::SpotRequest
                | Command::SpotClose
                | Command::ActorSend
                | Command::ActorRequest
                | Command::ActorDestroy
        )
    }

    /// Whether the head names a target (a ChannelName, a Spot ID or an Actor ID).
    pub fn has_target(self) -> bool {
        self.is_object()
            || matches!(
                self,
                Command::ChannelSend
                    | Command::ChannelRequest
                    | Command::LogicalMulticast
                    | Command::SpotCreate
                    | Command::ActorCreate
                    | Command::InstanceSpot
                    | Command::RelocationRestore
                    | Command::RelocationCutover
                    | Command::RelocationBarrier
                    | Command::MessageFollow
                    | Command::BoundSessionSend
                    | Command::BoundSessionBind
                    | Command::BoundSessionReplaced
                    | Command::SpotMemberDisconnected
                    | Command::CreationSettled
                    | Command::SessionRelocationSeal
                    | Command::SessionRelocationRoute
            )
    }

    /// Whether the command is a request (it carries a correlation and gets one reply).
    pub fn is_request(self) -> bool {
        matches!(
            self,
            Command::NodeRequest
                | Command::ChannelRequest
                | Command::SpotRequest
                | Command::SpotCreate
                | Command::SpotClose
                | Command::ActorRequest
                | Command::ActorCreate
                | Command::ActorDestroy
                | Command::InstanceSpot
                | Command::RelocationRestore
                | Command::RelocationCutover
                | Command::RelocationBarrier
                | Command::BoundSessionBind
                | Command::SessionRelocationSeal
                | Command::CreationSettled
        )
    }

    /// Whether the head may carry a bound-session tail: a session's relay to the Actor it
    /// is bound to.
    pub fn takes_session_tail(self) -> bool {
        matches!(self, Command::ActorSend | Command::ActorRequest)
    }
}
