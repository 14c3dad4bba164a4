//! The generated `HandlerGroup` implementation: dispatch by handler position (the runtime
//! has matched the packet name already), decode, call, encode.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::Ident;

use super::Group;
use crate::handler::HandlerKind;

/// Local names of the generated `handle`. Mixed-site hygiene keeps user locals apart; the
/// prefix keeps user items apart too (a unit struct named `message` would otherwise turn a
/// binding into a pattern).
struct Locals {
    ctx: Ident,
    packet: Ident,
    payload: Ident,
    message: Ident,
    reply: Ident,
}

impl Locals {
    fn new() -> Self {
        let local = |name: &str| Ident::new(&format!("__zlink_{name}"), Span::mixed_site());
        Locals {
            ctx: local("ctx"),
            packet: local("handler"),
            payload: local("payload"),
            message: local("message"),
            reply: local("reply"),
        }
    }
}

pub(crate) fn generate(group: &Group) -> TokenStream {
    let krate = &group.args.krate;
    let self_ty = group.self_ty;
    let Locals {
        ctx,
        packet,
        payload,
        message,
        reply,
    } = Locals::new();
    let packets = group.handlers.iter().map(|h| {
        let message_ty = &h.message;
        let kind = match h.kind {
            HandlerKind::Request => quote!(Request),
            HandlerKind::Send => quote!(Send),
        };
        quote_spanned! {message_ty.span()=>
            (
                ::std::string::String::from(<#message_ty as #krate::Message>::PACKET_NAME),
                #krate::PacketKind::#kind,
            )
        }
    });
    let branches = group.handlers.iter().enumerate().map(|(index, h)| {
        let message_ty = &h.message;
        let method = &h.method;
        let ctx_arg = if h.context_by_ref {
            quote!(&#ctx)
        } else {
            quote!(#ctx)
        };
        let call = quote_spanned! {h.return_span=>
            Self::#method(self, #message, #ctx_arg)
                .await
                .map_err(#krate::__private::into_error)?
        };
        let finish = match h.kind {
            HandlerKind::Request => quote_spanned! {h.return_span=>
                let #reply = #call;
                return #krate::__private::encode_reply::<#message_ty, _>(#reply);
            },
            HandlerKind::Send => quote! {
                #call;
                return ::core::result::Result::Ok(#krate::Bytes::new());
            },
        };
        quote_spanned! {message_ty.span()=>
            #index => {
                let #message = <#message_ty as #krate::Message>::decode(&#payload)?;
                #finish
            }
        }
    });
    let default_channel = group.args.default_name.as_ref().map(|name| {
        quote! {
            #[automatically_derived]
            impl #krate::DefaultChannel for #self_ty {
                const CHANNEL: &'static str = #name;
            }
        }
    });
    quote! {
        #[automatically_derived]
        impl #krate::HandlerGroup for #self_ty {
            fn packets(&self) -> ::std::vec::Vec<(::std::string::String, #krate::PacketKind)> {
                ::std::vec![#(#packets),*]
            }

            fn handle<'zlink>(
                &'zlink self,
                #ctx: #krate::HandlerContext,
                #packet: usize,
                #payload: #krate::Bytes,
            ) -> #krate::BoxFuture<'zlink, #krate::Result<#krate::Bytes>> {
                ::std::boxed::Box::pin(async move {
                    match #packet {
                        #(#branches)*
                        _ => ::core::result::Result::Err(#krate::__private::no_handler(&#ctx, #packet)),
                    }
                })
            }
        }
        #default_channel
    }
}
