//! The command line: where the Location Store is, and what to do with it.

use clap::{Args, Parser, Subcommand};

/// Reads and repairs a zlink mesh's Location Store: lists nodes, says where an object is,
/// lists what a node owns, and reclaims a dead node's objects once its owner lease has
/// expired (never before: a live owner's objects are refused, and the reason printed).
///
/// It uses the same store settings as the mesh's nodes: give the Redis URL (or the
/// cluster's seed URLs) and the key prefix their `RedisOptions` name. It needs no CURVE
/// keys: it talks to the store, never to a node.
#[derive(Debug, Parser)]
#[command(name = "zlink-admin", version, about, long_about)]
pub struct Cli {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print JSON (one document) instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// Where the Location Store is.
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// The Redis URL the nodes use, e.g. redis://127.0.0.1:6379.
    #[arg(long, global = true, env = "ZLINK_REDIS", conflicts_with = "cluster")]
    pub redis: Option<String>,
    /// A Redis Cluster: one or more seed URLs, comma-separated.
    #[arg(
        long,
        global = true,
        env = "ZLINK_REDIS_CLUSTER",
        value_delimiter = ','
    )]
    pub cluster: Vec<String>,
    /// The key prefix of the nodes' `RedisOptions`.
    #[arg(long, global = true, env = "ZLINK_PREFIX", default_value = "zlink")]
    pub prefix: String,
    /// How long one store operation may take, in milliseconds.
    #[arg(long, global = true, default_value_t = 5000)]
    pub timeout_ms: u64,
}

/// What to do.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// The nodes of a mesh: RID, lifecycle generation, endpoint, lease health, draining.
    Nodes {
        /// The MeshName.
        #[arg(long, default_value = "zlink")]
        mesh: String,
    },
    /// Where the Spot and the Actor with this ID are: owner, generation, state, lease.
    Where {
        /// The object's ID.
        id: String,
    },
    /// What a node owns (every lifecycle of the RID), one page at a time.
    Objects {
        /// The node's RID.
        #[arg(long)]
        node: String,
        /// Where to start (the `next` a previous page printed).
        #[arg(long)]
        cursor: Option<String>,
        /// Every page, not one.
        #[arg(long)]
        all: bool,
    },
    /// Releases a dead owner's objects so they can be created anew. Refused for any
    /// object whose owner lease is still live. Exits 3 when an object was left in place
    /// (a live lease, or a record that changed meanwhile); an ID already Missing is not
    /// a refusal.
    Reclaim {
        /// The object's ID (its Spot and its Actor, if any).
        #[arg(required_unless_present = "node", conflicts_with = "node")]
        id: Option<String>,
        /// Every object whose record names this RID.
        #[arg(long)]
        node: Option<String>,
    },
}
