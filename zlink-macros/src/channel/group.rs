//! The generated `HandlerGroup` implementation: dispatch by packet name, decode, call, encode.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::handler::HandlerKind;
use super::Group;

pub(crate) fn generate(group: &Group) -> TokenStream {
    let krate = &group.args.krate;
    let self_ty = group.self_ty;
    let packets = group.handlers.iter().map(|h| {
        let message = &h.message;
        let kind = match h.kind {
            HandlerKind::Request { .. } => quote!(Request),
            HandlerKind::Send => quote!(Send),
        };
        quote_spanned! {message.span()=>
            (
                ::std::string::String::from(<#message as #krate::Message>::PACKET_NAME),
                #krate::PacketKind::#kind,
            )
        }
    });
    let branches = group.handlers.iter().map(|h| {
        let message = &h.message;
        let method = &h.method;
        let ctx = if h.context_by_ref {
            quote!(&ctx)
        } else {
            quote!(ctx)
        };
        let call = quote_spanned! {h.return_span=>
            Self::#method(self, message, #ctx)
                .await
                .map_err(#krate::__private::into_error)?
        };
        let finish = match h.kind {
            HandlerKind::Request { .. } => quote! {
                let reply = #call;
                return #krate::Message::encode(&reply);
            },
            HandlerKind::Send => quote! {
                #call;
                return ::core::result::Result::Ok(#krate::Bytes::new());
            },
        };
        let decode = quote_spanned! {message.span()=>
            let message = <#message as #krate::Message>::decode(&payload)?;
        };
        quote_spanned! {message.span()=>
            if packet == <#message as #krate::Message>::PACKET_NAME {
                #decode
                #finish
            }
        }
    });
    let default_channel = group.args.default_name.as_ref().map(|name| {
        quote! {
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
                ctx: #krate::HandlerContext,
                packet: &'zlink str,
                payload: #krate::Bytes,
            ) -> #krate::BoxFuture<'zlink, #krate::Result<#krate::Bytes>> {
                ::std::boxed::Box::pin(async move {
                    #(#branches)*
                    ::core::result::Result::Err(#krate::__private::no_handler(packet))
                })
            }
        }
        #default_channel
    }
}
