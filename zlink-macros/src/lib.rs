//! Procedural macros for zlink. Use them through the `zlink` crate (`zlink::Message`,
//! `zlink::channel`, `zlink::handler`); this crate holds no runtime logic.

mod attr_keys;
mod channel;
mod crate_path;
mod message;
mod names;

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
/// `#[channel(server)]` marks the block; optional keys: `name = "..."` (a default
/// ChannelName, so `RuntimeBuilder::serve` and `XxxClient::on_default_channel` need no
/// name), `client = Name` (the client type's name, `XxxClient` by default) and
/// `crate = "path"` (where to find zlink).
///
/// Each `#[handler]` method is `async fn name(&self, message: M, ctx: &HandlerContext)`
/// returning `Result<Reply, E>` for a request (`Reply` must be `M`'s declared reply type) or
/// `Result<(), E>` for a one-way send, where `E: Into<zlink::Error>`. Other methods in the
/// block stay ordinary methods. The macro generates:
/// - `impl zlink::HandlerGroup` dispatching by packet name (decode, call, encode; an `Err`
///   becomes an error reply with its kind);
/// - `impl zlink::DefaultChannel` when `name` is given;
/// - `XxxClient`, with one method per handler taking `&M`, plus `name_with(&M, CallOptions)`
///   for a per-call timeout and metadata.
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
///     .wait_for_peers(std::time::Duration::from_secs(5), |peers| !peers.is_empty())
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

/// Marks a handler method inside a `#[zlink::channel(server)]` block; see [`macro@channel`].
/// Anywhere else it is an error.
#[proc_macro_attribute]
pub fn handler(_args: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let error = syn::Error::new(
        proc_macro2::Span::call_site(),
        "#[handler] only marks methods inside a #[zlink::channel(server)] impl block; put #[zlink::channel(server)] on the enclosing impl",
    )
    .to_compile_error();
    quote::quote!(#error #item).into()
}
