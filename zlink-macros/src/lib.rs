//! Procedural macros for zlink. Use them through the `zlink` crate (`zlink::Message`,
//! `zlink::channel`, `zlink::handler`); this crate holds no runtime logic.

mod attr_keys;
mod channel;
mod checks;
mod crate_path;
mod handler;
mod handler_block;
mod message;
mod names;
mod object;
mod session;

use proc_macro::TokenStream;

/// Implements `zlink::Message` (and, with `reply`, `zlink::Request`) for a type.
///
/// Keys of `#[message(...)]`, all optional:
/// - `name = "..."`: the packet name (1..=255 bytes); defaults to the type's name.
/// - `codec = Type`: a type implementing `zlink::Codec<Self>`; defaults to `zlink::Cbor`
///   (serde). `zlink::Json` is built in.
/// - `reply = Type`: makes this a request whose reply is `Type`; calls return exactly that
///   type and a handler returning another type does not compile.
/// - `crate = "path"`: where to find zlink when it is reached through a re-export.
///
/// ```
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, zlink::Message)]
/// #[message(reply = Quote)]
/// struct GetQuote {
///     symbol: String,
/// }
///
/// #[derive(Serialize, Deserialize, zlink::Message)]
/// #[message(name = "quote.v1", codec = zlink::Json)]
/// struct Quote {
///     cents: u64,
/// }
///
/// use zlink::Message as _;
/// assert_eq!(GetQuote::PACKET_NAME, "GetQuote");
/// assert_eq!(Quote::PACKET_NAME, "quote.v1");
/// assert_eq!(&Quote { cents: 5 }.encode()?[..], br#"{"cents":5}"#);
/// # Ok::<(), zlink::Error>(())
/// ```
#[proc_macro_derive(Message, attributes(message))]
pub fn derive_message(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    message::derive(input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Turns an `impl` block into a channel handler group and generates its typed client.
///
/// `#[channel(server)]` marks the block (`server` is the one required key). Optional
/// keys: `name = "..."` (a default ChannelName, so `RuntimeBuilder::serve` and
/// `XxxClient::on_default_channel` need no name), `client = Name` (the client type's
/// name, `XxxClient` by default) and `crate = "path"` (where to find zlink).
///
/// Each `#[handler]` method is `async fn name(&self, message: M, ctx: &HandlerContext)`
/// returning `Result<Reply, E>` for a request (`Reply` must be `M`'s declared reply type) or
/// `Result<(), E>` for a one-way send, where `E: Into<zlink::Error>`. Other methods in the
/// block stay ordinary methods. The macro generates:
/// - `impl zlink::HandlerGroup` dispatching by packet name (decode, call, encode; an `Err`
///   becomes an error reply with its kind);
/// - `impl zlink::DefaultChannel` when `name` is given;
/// - `XxxClient`, made from a `&Runtime` or a `&Handle`, with one method per handler taking
///   `&M` and returning a [`Call`](https://docs.rs/zlink/latest/zlink/struct.Call.html):
///   await it, or give it a timeout and metadata first (`.timeout(d).await`).
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use zlink::{HandlerContext, Runtime};
///
/// #[derive(Serialize, Deserialize, zlink::Message)]
/// #[message(reply = Sum)]
/// struct Add(i64, i64);
///
/// #[derive(Serialize, Deserialize, zlink::Message)]
/// struct Sum(i64);
///
/// #[derive(Clone)]
/// struct Calculator;
///
/// #[zlink::channel(server, name = "calc")]
/// impl Calculator {
///     #[handler]
///     async fn add(&self, add: Add, _ctx: &HandlerContext) -> zlink::Result<Sum> {
///         Ok(Sum(add.0 + add.1))
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> zlink::Result<()> {
/// let server = Runtime::builder()
///     .mesh_name("doc")
///     .listen("tcp://127.0.0.1:0")
///     .serve(Calculator)
///     .build()?
///     .start()
///     .await?;
/// let client = Runtime::builder()
///     .mesh_name("doc")
///     .listen("tcp://127.0.0.1:0")
///     .peer(zlink::PeerSpec::new(server.endpoint()))
///     .channel_client("calc")
///     .build()?
///     .start()
///     .await?;
/// client
///     .nodes().wait_for(std::time::Duration::from_secs(5), |peers| !peers.is_empty())
///     .await?;
/// let calc = CalculatorClient::on_default_channel(&client);
/// assert_eq!(calc.add(&Add(2, 3)).await?.0, 5);
/// # client.shutdown().await;
/// # server.shutdown().await;
/// # Ok(())
/// # }
/// ```
#[proc_macro_attribute]
pub fn channel(args: TokenStream, item: TokenStream) -> TokenStream {
    channel::expand(args.into(), item.into()).into()
}

/// Turns an `impl` block into a Spot type: its dispatch, its declaration and a typed client
/// addressed by global ID.
///
/// `#[spot(type = "room", relocation = disable)]` marks the block. Keys of
/// `#[spot(...)]`:
/// - `type = "..."` (required): the stable type name (1..=255 bytes) every node knows it by.
/// - `relocation = ...` (required): what a move between nodes does with it: `disable`
///   (never moved), `recreate` (a fresh instance on the target) or `preserve` (its state
///   moves: the type implements `zlink::object::RelocationState`, and the macro wires it).
/// - `actors = Type` (optional): the Actor type this Spot takes as members; then the block
///   may mark `#[on_actor_join]`, `#[on_joined_actor]`, `#[on_leave_actor]` and
///   `#[on_disconnect_actor]` (the session bound to a member disconnected) methods.
/// - `create = Type` (optional): the type of the Spot's creation arguments (a
///   `zlink::Message`). The block may then mark one method
///   `#[on_create] async fn name(&mut self, args: Type, ctx: &SpotContext) -> CreateDecision`,
///   which decides the creation in place of `Spot::on_create`, and the client's
///   `get_or_create` takes `&Type`.
/// - `instance` (optional flag): an Instance Spot type. Its Spots are never created: a
///   call with Instance intent to an ID with no Spot activates one, and that call's
///   message is its first handler call. The client has `XxxClient::instance(&runtime,
///   "spot-id")` (every call carries the intent) in place of `get_or_create`. It takes no
///   `actors` or `create`.
/// - `on_owner_lost = unavailable | reclaim` (optional, Spots and Actors): what a caller
///   does when the node that owned an object of this type died. `unavailable` (the default) ends the call
///   `Unavailable` until an operator reclaims the ID; `reclaim` lets a `get_or_create` or
///   an Instance intent call that finds the owner's lease expired reclaim the ID (fenced,
///   so racing callers make one new incarnation) and create it afresh.
/// - `client = Name` (optional): the client type's name, `XxxClient` by default.
/// - `crate = "path"` (optional): where to find zlink when it is reached through a
///   re-export.
///
/// Each `#[handler]` method is `async fn name(&mut self, message: M, ctx: &SpotContext)`
/// returning `Result<Reply, E>` for a request (`Reply` must be `M`'s declared reply type)
/// or `Result<(), E>` for a one-way send. Handlers run one at a time, so they take
/// `&mut self`. The macro generates:
/// - `impl zlink::object::SpotHandlers` (decode, call, encode);
/// - `Type::STABLE_TYPE`, `Type::RELOCATION` and `Type::spot_type(factory)` for
///   `RuntimeBuilder::spot_type`;
/// - `XxxClient::new(&runtime, "spot-id")` with one method per handler, and
///   `XxxClient::get_or_create(&runtime, "spot-id"[, &args]).await?`: the Spot exists
///   afterwards (found, or created by this call), in one call.
///
/// A method marked `#[subscribe(channel = "rooms", topic = "announce")]` in place of
/// `#[handler]` is a one-way handler that takes the Logical Multicast events of that topic
/// on that RouteMesh channel (`ctx.publish(..)` or `runtime.multicast().publish(..)`);
/// the client has no method for it. A node serving the type must be a Server member of
/// the channel (`RuntimeBuilder::multicast_channel`).
///
/// The lifecycle hooks are the `zlink::object::Spot` trait. Either mark them as methods
/// of the block, `#[on_initialize] async fn name(&mut self, ctx)`,
/// `#[on_timer] async fn name(&mut self, tick, ctx)` and
/// `#[on_closing] async fn name(&mut self, reason, ctx)`, and the macro writes the impl
/// (no `#[zlink::async_trait]` needed); or mark none and write
/// `impl zlink::object::Spot for Type {}` to take their defaults (with
/// `#[zlink::async_trait]` on it if it defines any).
#[proc_macro_attribute]
pub fn spot(args: TokenStream, item: TokenStream) -> TokenStream {
    object::expand(&object::SPOT, args.into(), item.into()).into()
}

/// Turns an `impl` block into an Actor type: its dispatch, its declaration and a typed
/// client addressed by global ID.
///
/// `#[actor(type = "player", relocation = recreate)]` marks the block. Keys of
/// `#[actor(...)]`: `type = "..."` and `relocation` (`disable`, `recreate` or `preserve`)
/// are required; `on_owner_lost` (`unavailable` or `reclaim`), `client = Name` and
/// `crate = "path"` are optional, as for [`macro@spot`].
/// Each `#[handler]` method is
/// `async fn name(&mut self, message: M, ctx: &ActorContext)`. The macro generates:
/// - `impl zlink::object::ActorHandlers` (decode, call, encode);
/// - `Type::STABLE_TYPE`, `Type::RELOCATION` and `Type::actor_type(factory)` for
///   `RuntimeBuilder::actor_type`;
/// - `XxxClient::new(&runtime, "actor-id")` with one method per handler, and
///   `XxxClient::get_or_create(&runtime, "actor-id").await?`.
///
/// The lifecycle hooks are the `zlink::object::Actor` trait: mark them in the block
/// (`#[on_initialize]`, `#[on_timer]`, `#[on_join_completed]` taking the outcome,
/// `#[on_closing]`) and the macro writes the impl, or write
/// `impl zlink::object::Actor for Type {}` to take their defaults.
#[proc_macro_attribute]
pub fn actor(args: TokenStream, item: TokenStream) -> TokenStream {
    object::expand(&object::ACTOR, args.into(), item.into()).into()
}

/// Turns an `impl` block into a STREAM session type: what a
/// `zlink::session::StreamListener` runs for each client connection.
///
/// `#[session]` marks the block; its one optional key is `crate = "path"` (where to find
/// zlink). Each `#[handler]` method is
/// `async fn name(&mut self, message: M, ctx: &SessionContext)` returning
/// `Result<Reply, E>` for a client's request (`Reply` must be `M`'s declared reply type; it
/// is the Response packet) or `Result<(), E>` for a client's one-way Send packet. `M` and
/// its reply must be JSON or Raw messages (`#[message(codec = zlink::Json)]`), the codecs a
/// STREAM client reads. An `Err` answers the request with an Error packet of its kind.
/// Handlers and callbacks run one at a time, in the order the client's packets arrived.
///
/// Callbacks, each optional and marked once in the block:
/// - `#[on_connected] async fn name(&mut self, ctx: &SessionContext) -> Result<(), E>`
///   runs before the first packet; an `Err` closes the connection.
/// - `#[on_packet] async fn name(&mut self, packet: Packet, ctx: &SessionContext) -> Result<(), E>`
///   takes every packet no handler names (for example to relay it to a bound Actor);
///   without it such a packet is answered `NotFound`.
/// - `#[on_actor_binding_replaced] async fn name(&mut self, actor: ActorRef, ctx: &SessionContext)`
///   runs when another session bound an Actor this one was bound to; the session closes
///   100 ms after it returns.
/// - `#[on_disconnected] async fn name(&mut self, reason: CloseReason, ctx: &SessionContext)`
///   runs last, once.
///
/// The macro generates `impl zlink::session::Session` for the type.
#[proc_macro_attribute]
pub fn session(args: TokenStream, item: TokenStream) -> TokenStream {
    session::expand(args.into(), item.into()).into()
}

/// Marks a handler method inside a `#[zlink::channel(server)]`, `#[zlink::spot(...)]`,
/// `#[zlink::actor(...)]` or `#[zlink::session]` block; see [`macro@channel`],
/// [`macro@spot`], [`macro@actor`] and [`macro@session`]. Anywhere else it is an error.
#[proc_macro_attribute]
pub fn handler(_args: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let error = syn::Error::new(
        proc_macro2::Span::call_site(),
        "#[handler] only marks methods inside a #[zlink::channel(server)], #[zlink::spot(...)], #[zlink::actor(...)] or #[zlink::session] impl block; put one of them on the enclosing impl",
    )
    .to_compile_error();
    quote::quote!(#error #item).into()
}

/// Joins errors so every one of them is reported.
pub(crate) fn combine(into: Option<syn::Error>, error: syn::Error) -> syn::Error {
    match into {
        Some(mut all) => {
            all.combine(error);
            all
        }
        None => error,
    }
}

/// Every key a macro's attribute parser accepts is documented on the macro: the check
/// reads the parsers' `"key" =>` arms from their source and the doc comment above each
/// macro function.
#[cfg(test)]
mod documented_keys {
    /// The doc comment lines right above `pub fn {name}`.
    fn doc_of(lib: &str, name: &str) -> String {
        let lines: Vec<&str> = lib.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with(&format!("pub fn {name}(")))
            .unwrap_or_else(|| panic!("no pub fn {name} in lib.rs"));
        let mut doc = Vec::new();
        for line in lines[..at].iter().rev() {
            let line = line.trim_start();
            if line.starts_with("#[") {
                continue;
            }
            match line.strip_prefix("///") {
                Some(text) => doc.push(text),
                None => break,
            }
        }
        doc.reverse();
        doc.join("\n")
    }

    /// The string literals that open match arms (`"key" =>` or `"key" if ... =>`).
    fn arms(source: &str) -> Vec<String> {
        let mut keys = Vec::new();
        for line in source.lines() {
            let line = line.trim_start();
            let Some(rest) = line.strip_prefix('"') else {
                continue;
            };
            let Some((key, after)) = rest.split_once('"') else {
                continue;
            };
            let after = after.trim_start();
            if (after.starts_with("=>") || after.starts_with("if "))
                && !key.is_empty()
                && key.chars().all(|c| c.is_ascii_lowercase() || c == '_')
            {
                keys.push(key.to_string());
            }
        }
        keys
    }

    #[test]
    fn every_attribute_key_a_macro_accepts_is_in_its_rustdoc() {
        let lib = include_str!("lib.rs");
        let cases: [(&str, &str, &[&str]); 5] = [
            ("derive_message", include_str!("message.rs"), &[]),
            ("channel", include_str!("channel/args.rs"), &[]),
            // `server` is refused with a pointer to #[channel(server)].
            ("spot", include_str!("object/args.rs"), &["server"]),
            // `actors` is a Spot's; an Actor refuses it.
            (
                "actor",
                include_str!("object/args.rs"),
                &["server", "actors", "create", "instance"],
            ),
            ("session", include_str!("session/args.rs"), &[]),
        ];
        for (name, parser, refused) in cases {
            let doc = doc_of(lib, name);
            let keys = arms(parser);
            assert!(!keys.is_empty(), "no keys found for {name}");
            for key in keys.iter().filter(|k| !refused.contains(&k.as_str())) {
                assert!(
                    doc.contains(&format!("`{key}")),
                    "#[{name}] accepts `{key}` but its rustdoc does not mention it"
                );
            }
        }
    }
}
