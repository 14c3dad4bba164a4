//! The generated `SpotHandlers` / `ActorHandlers` implementation (dispatch by handler
//! position: decode, call with `&mut self`, encode) and the type's declaration
//! (`STABLE_TYPE`, `RELOCATION`, `spot_type(factory)` / `actor_type(factory)`).

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::Ident;

use super::args::Policy;
use super::ObjectBlock;
use crate::handler::HandlerKind;

fn local(name: &str) -> Ident {
    Ident::new(&format!("__zlink_{name}"), Span::mixed_site())
}

pub(crate) fn generate(spot: &ObjectBlock) -> TokenStream {
    let krate = &spot.args.krate;
    let kind = spot.kind;
    let name = |text: &str| Ident::new(text, Span::call_site());
    let (handlers_trait, context, type_struct, register) = (
        name(kind.handlers_trait),
        name(kind.context),
        name(kind.type_struct),
        name(kind.register),
    );
    let noun = kind.noun;
    let member_hooks = spot.members.forward(krate);
    let create_hook = spot.create_hook.forward(krate, spot.args.create.as_ref());
    let takes_actors = spot.args.actors.as_ref().map(|actors| {
        quote_spanned! {actors.span()=>
            .and_then(|__zlink_type| __zlink_type.takes_actors(<#actors>::STABLE_TYPE))
        }
    });
    let instance = spot.args.instance.map(|span| {
        quote_spanned! {span=>
            .and_then(|__zlink_type| __zlink_type.instance())
        }
    });
    let owner_lost = spot.args.reclaim_on_owner_lost.map(|span| {
        quote_spanned! {span=>
            .map(|__zlink_type| __zlink_type.reclaim_on_owner_lost())
        }
    });
    let subscriptions = spot.handlers.iter().filter_map(|h| {
        let subscription = h.subscription.as_ref()?;
        let (channel, topic, message_ty) = (&subscription.channel, &subscription.topic, &h.message);
        Some(quote_spanned! {channel.span()=>
            .and_then(|__zlink_type| __zlink_type.subscribe(
                #channel,
                #topic,
                <#message_ty as #krate::Message>::PACKET_NAME,
            ))
        })
    });
    let stable_doc =
        format!("The stable type name this {noun} type is registered and created under.");
    let relocation_doc = format!(
        "What happens to a{} {noun} of this type when it is moved to another node.",
        if noun.starts_with('A') { "n" } else { "" }
    );
    let register_doc = format!(
        "This {noun} type, its {noun}s made by `factory`: register it with \
         `RuntimeBuilder::{}` on every node that serves it.",
        kind.register
    );
    let self_ty = spot.self_ty;
    let (ctx, handler, payload, message, reply, factory) = (
        local("ctx"),
        local("handler"),
        local("payload"),
        local("message"),
        local("reply"),
        local("factory"),
    );
    let packets = spot.handlers.iter().map(|h| {
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
    let branches = spot.handlers.iter().enumerate().map(|(index, h)| {
        let message_ty = &h.message;
        let method = &h.method;
        let call = quote_spanned! {h.return_span=>
            Self::#method(self, #message, #ctx)
                .await
                .map_err(#krate::__private::into_error)?
        };
        let finish = match h.kind {
            HandlerKind::Request => quote_spanned! {h.return_span=>
                let #reply = #call;
                #krate::__private::reply_payload::<#message_ty, _>(#reply)
            },
            HandlerKind::Send => quote! {
                #call;
                ::core::result::Result::Ok(#krate::Payload::default())
            },
        };
        quote_spanned! {message_ty.span()=>
            #index => {
                let #message = #payload.into_message::<#message_ty>()?;
                #finish
            }
        }
    });
    let stable_type = &spot.args.stable_type;
    let policy = match spot.args.policy {
        Policy::Disable => quote!(#krate::object::Relocation::Disable),
        Policy::Recreate => quote!(#krate::object::Relocation::Recreate),
        Policy::Preserve(_) => quote!(#krate::object::Relocation::Preserve),
    };
    // `preserve` hands the framework the type's adapter; without one this fails to
    // compile, pointing at the attribute.
    let state_adapter = match spot.args.policy {
        Policy::Preserve(span) => quote_spanned! {span=>
            fn relocation_state(
                &mut self,
            ) -> ::core::option::Option<&mut dyn #krate::object::RelocationState> {
                ::core::option::Option::Some(self)
            }
        },
        _ => quote!(),
    };
    quote! {
        #[automatically_derived]
        #[#krate::async_trait]
        impl #krate::object::#handlers_trait for #self_ty {
            fn packets() -> ::std::vec::Vec<(::std::string::String, #krate::PacketKind)> {
                ::std::vec![#(#packets),*]
            }

            async fn handle(
                &mut self,
                #ctx: &#krate::object::#context,
                #handler: usize,
                #payload: #krate::Payload,
            ) -> #krate::Result<#krate::Payload> {
                match #handler {
                    #(#branches)*
                    _ => ::core::result::Result::Err(#krate::__private::no_object_handler(#ctx, #handler)),
                }
            }

            #member_hooks
            #create_hook
            #state_adapter
        }

        #[automatically_derived]
        impl #self_ty {
            #[doc = #stable_doc]
            pub const STABLE_TYPE: &'static str = #stable_type;

            #[doc = #relocation_doc]
            pub const RELOCATION: #krate::object::Relocation = #policy;

            #[doc = #register_doc]
            pub fn #register(
                #factory: impl ::core::ops::Fn(&#krate::object::#context) -> Self
                    + ::core::marker::Send
                    + ::core::marker::Sync
                    + 'static,
            ) -> #krate::Result<#krate::object::#type_struct> {
                #krate::object::#type_struct::new(Self::STABLE_TYPE, Self::RELOCATION, #factory)
                    #takes_actors
                    #instance
                    #owner_lost
                    #(#subscriptions)*
            }
        }
    }
}
