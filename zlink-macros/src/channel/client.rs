//! The generated typed client: one method per handler (plus a `_with` form taking
//! `CallOptions`), each a `request_to_channel` / `send_to_channel` on the bound ChannelName.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::handler::{Handler, HandlerKind};
use super::Group;

pub(crate) fn generate(group: &Group) -> TokenStream {
    let krate = &group.args.krate;
    let self_ty = group.self_ty;
    let client = &group.client;
    let type_doc = format!(
        "Typed client for the channel served by [`{}`]: one method per handler, each \
         selecting one server by weight. Cheap to clone.",
        quote!(#self_ty)
    );
    let default_ctor = group.args.default_name.as_ref().map(|name| {
        let doc = format!("A client of the default channel `{name}`.");
        quote! {
            #[doc = #doc]
            pub fn on_default_channel(runtime: &#krate::Runtime) -> Self {
                Self::new(runtime, <#self_ty as #krate::DefaultChannel>::CHANNEL)
            }
        }
    });
    let methods = group.handlers.iter().map(|h| method(group, h));
    quote! {
        #[doc = #type_doc]
        #[derive(::core::clone::Clone)]
        pub struct #client {
            runtime: #krate::Runtime,
            channel: ::std::sync::Arc<str>,
        }

        impl ::core::fmt::Debug for #client {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(::core::stringify!(#client))
                    .field("channel", &&*self.channel)
                    .finish_non_exhaustive()
            }
        }

        impl #client {
            /// A client that calls `channel` through `runtime`, which must have registered
            /// the channel (as Client or Server).
            pub fn new(
                runtime: &#krate::Runtime,
                channel: impl ::core::convert::Into<::std::string::String>,
            ) -> Self {
                let channel: ::std::string::String = channel.into();
                Self {
                    runtime: ::core::clone::Clone::clone(runtime),
                    channel: ::std::sync::Arc::from(channel),
                }
            }

            #default_ctor

            /// The ChannelName this client calls.
            pub fn channel_name(&self) -> &str {
                &self.channel
            }

            #(#methods)*
        }
    }
}

fn method(group: &Group, h: &Handler) -> TokenStream {
    let krate = &group.args.krate;
    let message = &h.message;
    let name = &h.method;
    let name_with = format_ident!("{}_with", name);
    let docs = &h.docs;
    let message_text = quote!(#message).to_string();
    let separator = (!docs.is_empty()).then(|| quote!(#[doc = ""]));
    match h.kind {
        HandlerKind::Request { .. } => {
            let doc = format!(
                "Sends a `{message_text}` request to one server of this channel and returns its reply."
            );
            let with_doc = format!("[`{name}`](Self::{name}) with a timeout and metadata.");
            quote_spanned! {message.span()=>
                #(#docs)*
                #separator
                #[doc = #doc]
                pub async fn #name(
                    &self,
                    request: &#message,
                ) -> #krate::Result<<#message as #krate::Request>::Reply> {
                    self.runtime.request_to_channel(&self.channel, request).await
                }

                #[doc = #with_doc]
                pub async fn #name_with(
                    &self,
                    request: &#message,
                    options: #krate::CallOptions,
                ) -> #krate::Result<<#message as #krate::Request>::Reply> {
                    self.runtime
                        .request_to_channel_with(&self.channel, request, options)
                        .await
                }
            }
        }
        HandlerKind::Send => {
            let doc = format!(
                "Sends a one-way `{message_text}` to one server of this channel; completes when the local queue accepts it."
            );
            let with_doc = format!("[`{name}`](Self::{name}) with a timeout and metadata.");
            quote_spanned! {message.span()=>
                #(#docs)*
                #separator
                #[doc = #doc]
                pub async fn #name(&self, message: &#message) -> #krate::Result<()> {
                    self.runtime.send_to_channel(&self.channel, message).await
                }

                #[doc = #with_doc]
                pub async fn #name_with(
                    &self,
                    message: &#message,
                    options: #krate::CallOptions,
                ) -> #krate::Result<()> {
                    self.runtime
                        .send_to_channel_with(&self.channel, message, options)
                        .await
                }
            }
        }
    }
}
