//! The names of zlink's instruments: `zlink_<surface>_<name>`, with the unit in the name.
//! The book's "Operating zlink" chapter lists them with their labels.

/// Gauge: calls started by the application and not yet ended. Labels: `surface`.
pub const CALLS_IN_FLIGHT: &str = "zlink_calls_in_flight";
/// Counter: calls the application made. Labels: `surface`, `kind`, `outcome`.
pub const CALLS: &str = "zlink_calls_total";
/// Histogram (seconds): a request's time from the caller's side. Labels: `surface`,
/// `outcome`.
pub const CALL_DURATION: &str = "zlink_call_duration_seconds";
/// Gauge: Spots and Actors this node owns (its Entry Spot aside). Labels: `kind`.
pub const OBJECTS_OWNED: &str = "zlink_objects_owned";
/// Counter: creations this node attempted. Labels: `kind`, `outcome` (`created`,
/// `rejected`, `not_created`).
pub const CREATIONS: &str = "zlink_object_creations_total";
/// Counter: moves this node started as the source. Labels: `kind`, `outcome` (`moved`,
/// `cancelled`, `lost`).
pub const RELOCATIONS: &str = "zlink_relocations_total";
/// Histogram (seconds): a move from its start to its outcome. Labels: `kind`, `outcome`.
pub const RELOCATION_DURATION: &str = "zlink_relocation_duration_seconds";
/// Gauge: this node's peers. Labels: `state` (`configured`: named in its settings;
/// `connected`: admitted on a connection; `ready`: selectable and reachable).
pub const PEERS: &str = "zlink_mesh_peers";
/// Counter: one-way messages this node accepted and could not deliver. Labels: `reason`
/// (`follow_hops`, `not_owner`, `full`, `target_unreachable`, `other_incarnation`,
/// `no_handler`, `stopped`, `activation_failed`).
pub const LOST_ONE_WAYS: &str = "zlink_object_lost_one_ways_total";
/// Counter: messages this node relayed by Message Follow to objects that moved away
/// (the saved queue and hold of a move, and what still arrived on the old route).
pub const FOLLOW_RELAYED: &str = "zlink_object_follow_relayed_total";
/// Gauge: STREAM sessions open on this node's listeners.
pub const SESSIONS_OPEN: &str = "zlink_session_open";
/// Counter: STREAM sessions that ended. Labels: `reason` (`client_close`,
/// `idle_timeout`, `heartbeat_timeout`, `server_drain`, `protocol_error`,
/// `transport_error`).
pub const SESSIONS_CLOSED: &str = "zlink_session_closed_total";
/// Counter: this node's Location Store calls. Labels: `op` (`read`, `apply`,
/// `renew_lease`, ...), `outcome` (`ok`, `failed`: an error, or given up on).
pub const STORE_OPERATIONS: &str = "zlink_store_operations_total";
/// Histogram (seconds): a Location Store call's time, failed ones included. Labels: `op`.
pub const STORE_OPERATION_DURATION: &str = "zlink_store_operation_duration_seconds";
/// Histogram (seconds): how late the owner lease's keeper woke for a renewal, after the
/// interval it slept (a starved runtime shows here before leases are lost). No labels
/// beyond the node's.
pub const LEASE_RENEWAL_LATENESS: &str = "zlink_store_lease_renewal_lateness_seconds";

/// How long a message waited in its object's mailbox before its turn (histogram, by
/// kind; only with a recorder installed).
pub const MAILBOX_WAIT: &str = "zlink_object_mailbox_wait_seconds";
/// Jobs waiting in an object's mailbox when one of its turns started from the queue
/// (histogram, by kind; give it [`DEPTH_BUCKETS`](super::DEPTH_BUCKETS)).
pub const MAILBOX_DEPTH: &str = "zlink_object_mailbox_depth_messages";
/// Turns that ran at least [`LONG_TURN`](super::LONG_TURN) (by kind).
pub const LONG_TURNS: &str = "zlink_object_long_turns_total";
/// How long creating (activating) a Spot or Actor took on the node that made it (by kind).
pub const ACTIVATION_DURATION: &str = "zlink_object_activation_duration_seconds";
/// Follow notices this node sent to senders that used a moved object's old route.
pub const FOLLOW_NOTICES: &str = "zlink_object_follow_notices_total";
/// Barriers this node sent ahead of a follow notice.
pub const FOLLOW_BARRIERS: &str = "zlink_object_follow_barriers_total";
/// Route cache lookups of this node's callers, by outcome (`hit`, `miss`).
pub const ROUTE_CACHE_LOOKUPS: &str = "zlink_object_route_cache_lookups_total";
/// Channel calls that found no server to select, by reason (`no_member`, `draining`).
pub const SELECTION_FAILURES: &str = "zlink_channel_selection_failures_total";
/// Bytes of RouteMesh messages, by direction (`received`, `sent`).
pub const LINK_BYTES: &str = "zlink_link_bytes_total";
/// Peers admitted on RouteMesh connections, by security (`null`, `curve`): each one a
/// completed handshake.
pub const LINK_ADMISSIONS: &str = "zlink_link_admissions_total";
/// RouteMesh admissions this node refused, by reason.
pub const LINK_REFUSALS: &str = "zlink_link_refusals_total";
/// Bytes of STREAM sessions' packets, by direction (`received`, `sent`).
pub const SESSION_BYTES: &str = "zlink_session_bytes_total";
/// Bytes a move carried (state and queue), by kind, on the node it left.
pub const RELOCATION_BYTES: &str = "zlink_relocation_bytes_total";
/// The pause a move's callers saw: from the seal until the target took over, by kind.
pub const RELOCATION_PAUSE: &str = "zlink_relocation_pause_seconds";
/// Objects this node's reclaims released or left in place, by outcome.
pub const RECLAIMS: &str = "zlink_object_reclaims_total";
/// RouteMesh messages dropped on arrival, by reason (`oversize`, `malformed`,
/// `no_handler`).
pub const DROPPED_MESSAGES: &str = "zlink_mesh_dropped_messages_total";
