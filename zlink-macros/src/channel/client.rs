//! The generated typed client: one method per handler (plus a `_with` form taking
//! `CallOptions`), each a `request_to_channel` / `send_to_channel` on the bound ChannelName.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::Ident;

use super::Group;
use crate::handler::{Handler, HandlerKind};

/// A parameter or local of generated code, kept apart from the user's locals (mixed-site
/// hygiene) and items (the prefix).
fn local(name: &str) -> Ident {
    Ident::new(&format!("__zlink_{name}"), Span::mixed_site())
}

pub(crate) fn generate(group: &Group) -> TokenStream {
    let krate = &group.args.krate;
    let (runtime, channel, f) = (local("runtime"), local("channel"), local("f"));
    let self_ty = group.self_ty;
    let client = &group.client;
    let type_doc = format!(
        "Typed client for the channel served by [`{}`]: one method per handler, each \
         selecting one server by weight. Cheap to clone.",
        quote!(#self_ty)
    );
    let runtime_param = runtime.clone();
    let default_ctor = group.args.default_name.as_ref().map(|name| {
        let doc = format!("A client of the default channel `{name}`.");
        quote! {
            #[doc = #doc]
            pub fn on_default_channel(#runtime_param: &#krate::Runtime) -> Self {
                Self::new(#runtime_param, <#self_ty as #krate::DefaultChannel>::CHANNEL)
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
            fn fmt(&self, #f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                #f.debug_struct(::core::stringify!(#client))
                    .field("channel", &&*self.channel)
                    .finish_non_exhaustive()
            }
        }

        // The client is `pub` whatever the message types' visibility; where they are
        // private, so in effect are the methods that name them.
        #[allow(private_interfaces)]
        impl #client {
            /// A client that calls `channel` through `runtime`. Making it declares the
            /// Client role for `channel` on `runtime` (nothing else needs declaring); a
            /// channel the runtime already serves or calls through ClientServer keeps that
            /// role.
            pub fn new(
                #runtime: &#krate::Runtime,
                #channel: impl ::core::convert::Into<::std::string::String>,
            ) -> Self {
                let #channel: ::std::string::String = #channel.into();
                #krate::__private::declare_client(#runtime, &#channel);
                Self {
                    runtime: ::core::clone::Clone::clone(#runtime),
                    channel: ::std::sync::Arc::from(#channel),
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
    let (request, sent, options) = (local("request"), local("message"), local("options"));
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
                    #request: &#message,
                ) -> #krate::Result<<#message as #krate::Request>::Reply> {
                    self.#name_with(#request, ::core::default::Default::default()).await
                }

                #[doc = #with_doc]
                pub async fn #name_with(
                    &self,
                    #request: &#message,
                    #options: #krate::CallOptions,
                ) -> #krate::Result<<#message as #krate::Request>::Reply> {
                    self.runtime
                        .request_to_channel_with(&self.channel, #request, #options)
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
                pub async fn #name(&self, #sent: &#message) -> #krate::Result<()> {
                    self.#name_with(#sent, ::core::default::Default::default()).await
                }

                #[doc = #with_doc]
                pub async fn #name_with(
                    &self,
                    #sent: &#message,
                    #options: #krate::CallOptions,
                ) -> #krate::Result<()> {
                    self.runtime
                        .send_to_channel_with(&self.channel, #sent, #options)
                        .await
                }
            }
        }
    }
}
