//! The generated typed client: one method per handler, each a channel request or send on
//! the bound ChannelName, returned as a `Call` (awaited directly, or given a timeout and
//! metadata first).

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
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
    let (handle, channel, f) = (local("handle"), local("channel"), local("f"));
    let self_ty = group.self_ty;
    let client = &group.client;
    let type_doc = format!(
        "Typed client for the channel served by [`{}`]: one method per handler, each \
         selecting one server by weight. Cheap to clone.",
        quote!(#self_ty)
    );
    let handle_param = handle.clone();
    let default_ctor = group.args.default_name.as_ref().map(|name| {
        let doc = format!("A client of the default channel `{name}`.");
        quote! {
            #[doc = #doc]
            pub fn on_default_channel(
                #handle_param: impl ::core::convert::Into<#krate::Handle>,
            ) -> Self {
                Self::new(#handle_param, <#self_ty as #krate::DefaultChannel>::CHANNEL)
            }
        }
    });
    let methods = group.handlers.iter().map(|h| method(group, h));
    quote! {
        #[doc = #type_doc]
        #[derive(::core::clone::Clone)]
        pub struct #client {
            handle: #krate::Handle,
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
            /// A client that calls `channel` through `handle` (a `&Runtime` or a
            /// `&Handle`, such as a handler context's). Making it declares the Client role
            /// for `channel` on that node (nothing else needs declaring); a channel the node
            /// already serves or calls through ClientServer keeps that role.
            pub fn new(
                #handle: impl ::core::convert::Into<#krate::Handle>,
                #channel: impl ::core::convert::Into<::std::string::String>,
            ) -> Self {
                let #handle: #krate::Handle = #handle.into();
                let #channel: ::std::string::String = #channel.into();
                #krate::__private::declare_client(&#handle, &#channel);
                Self {
                    handle: #handle,
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
    let docs = &h.docs;
    let message_text = quote!(#message).to_string();
    let sent = local("message");
    let separator = (!docs.is_empty()).then(|| quote!(#[doc = ""]));
    match h.kind {
        HandlerKind::Request => {
            let doc = format!(
                "A `{message_text}` request to one server of this channel: await it for the reply, or set its timeout and metadata first."
            );
            quote_spanned! {message.span()=>
                #(#docs)*
                #separator
                #[doc = #doc]
                pub fn #name<'__zlink>(
                    &'__zlink self,
                    #sent: &#message,
                ) -> #krate::Call<'__zlink, #krate::Reply<<#message as #krate::Request>::Reply>> {
                    self.handle.channels().request(&self.channel, #sent)
                }
            }
        }
        HandlerKind::Send => {
            let doc = format!(
                "A one-way `{message_text}` to one server of this channel; complete when the local queue accepts it."
            );
            quote_spanned! {message.span()=>
                #(#docs)*
                #separator
                #[doc = #doc]
                pub fn #name<'__zlink>(
                    &'__zlink self,
                    #sent: &#message,
                ) -> #krate::Call<'__zlink, #krate::OneWay> {
                    self.handle.channels().send(&self.channel, #sent)
                }
            }
        }
    }
}
