//! `#[session]`: turns an impl block of `&mut self` `#[handler]` methods and marked
//! callbacks into the `zlink::session::Session` implementation a STREAM listener runs for
//! each client connection.

mod args;
mod hooks;

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, ItemImpl, Path};

use crate::checks;
use crate::handler::{Flavor, Handler, HandlerKind};
use crate::handler_block::{self, BlockKind};
use args::SessionArgs;
use hooks::Hooks;

/// How `#[session]` words its block errors and parses its handlers.
const BLOCK: BlockKind = BlockKind {
    attr: "#[session]",
    flavor: Flavor::Session,
    generic_hint: "declare a concrete session type",
    example: "Lobby",
};

/// Expands `#[session]` on `item`. On error the impl block is still emitted, with a
/// stand-in `Session` impl, so the only errors the user sees are ours.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut block = match handler_block::parse(item, &BLOCK) {
        Ok(block) => block,
        Err(error) => return error,
    };
    let unmarked = handler_block::unmarked_handlers(&block, &BLOCK);
    let handlers = handler_block::take_handlers(&mut block, &BLOCK);
    let hooks = Hooks::take(&mut block);
    let parsed = SessionArgs::parse(args);
    let krate = parsed
        .as_ref()
        .map(|a| a.krate.clone())
        .unwrap_or_else(|_| crate::crate_path::default_path());
    let generated = match parsed.and_then(|args| generate(&block, &args, handlers, hooks?)) {
        Ok(generated) => generated,
        Err(error) => {
            let error = error.into_compile_error();
            let stand_in = handler_block::self_name(&block, &BLOCK)
                .ok()
                .map(|_| session_impl(&krate, &block, &[], &Hooks::default()));
            quote!(#error #stand_in)
        }
    };
    quote! {
        #block
        #generated
        #unmarked
    }
}

fn generate(
    block: &ItemImpl,
    args: &SessionArgs,
    handlers: Vec<syn::Result<Handler>>,
    hooks: Hooks,
) -> syn::Result<TokenStream> {
    handler_block::self_name(block, &BLOCK)?;
    let checked = handler_block::checked(handlers, &[])?;
    let krate = &args.krate;
    let session = session_impl(krate, block, &checked, &hooks);
    let names_differ = checks::generate(krate, &checked);
    let readable = readable_by_clients(krate, &checked);
    Ok(quote! {
        #session
        #names_differ
        #readable
    })
}

fn local(name: &str) -> Ident {
    Ident::new(&format!("__zlink_{name}"), Span::mixed_site())
}

/// The `Session` impl: the handlers by position, and the marked callbacks.
fn session_impl(
    krate: &Path,
    block: &ItemImpl,
    handlers: &[Handler],
    hooks: &Hooks,
) -> TokenStream {
    let self_ty = &block.self_ty;
    let (ctx, handler, packet, message, reply, token, codec) = (
        local("ctx"),
        local("handler"),
        local("packet"),
        local("message"),
        local("reply"),
        local("token"),
        local("codec"),
    );
    let packets = handlers.iter().map(|h| {
        let message_ty = &h.message;
        let kind = match h.kind {
            HandlerKind::Request => quote!(Request),
            HandlerKind::Send => quote!(Send),
        };
        quote_spanned! {message_ty.span()=>
            (<#message_ty as #krate::Message>::PACKET_NAME, #krate::PacketKind::#kind)
        }
    });
    let branches = handlers.iter().enumerate().map(|(index, h)| {
        let message_ty = &h.message;
        let method = &h.method;
        let call = quote_spanned! {h.return_span=>
            Self::#method(self, #message, #ctx)
                .await
                .map_err(#krate::__private::into_error)
        };
        let body = match h.kind {
            HandlerKind::Request => quote_spanned! {h.return_span=>
                let #token = #packet.take_reply();
                let #message = #packet.decode::<#message_ty>()?;
                let (#codec, #reply) = #krate::__private::session_reply::<#message_ty, _>(#call?)?;
                match #token {
                    ::core::option::Option::Some(#token) => #token.reply_bytes(#codec, #reply).await,
                    ::core::option::Option::None => ::core::result::Result::Ok(()),
                }
            },
            HandlerKind::Send => quote! {
                let #message = #packet.decode::<#message_ty>()?;
                #call
            },
        };
        quote_spanned! {message_ty.span()=>
            #index => { #body }
        }
    });
    let callbacks = hooks.forward(krate);
    quote! {
        #[automatically_derived]
        impl #krate::session::Session for #self_ty {
            fn packets() -> ::std::vec::Vec<(&'static str, #krate::PacketKind)> {
                ::std::vec![#(#packets),*]
            }

            #[allow(unused_mut)]
            fn handle<'__zlink_a>(
                &'__zlink_a mut self,
                #ctx: &'__zlink_a #krate::session::SessionContext,
                #handler: usize,
                mut #packet: #krate::session::Packet,
            ) -> #krate::BoxFuture<'__zlink_a, #krate::Result<()>> {
                ::std::boxed::Box::pin(async move {
                    match #handler {
                        #(#branches)*
                        _ => ::core::result::Result::Err(
                            #krate::__private::no_session_handler(#handler, #packet.name()),
                        ),
                    }
                })
            }

            #callbacks
        }
    }
}

/// Every handled message, and every request's reply, must be one a STREAM client reads
/// (JSON or Raw); checked at compile time at the message type.
fn readable_by_clients(krate: &Path, handlers: &[Handler]) -> TokenStream {
    let checks = handlers.iter().map(|h| {
        let message_ty = &h.message;
        let text = format!(
            "a STREAM client reads JSON or Raw packets only: derive `{}` with #[message(codec = zlink::Json)]",
            quote!(#message_ty)
        );
        quote_spanned! {message_ty.span()=>
            ::core::assert!(
                <#message_ty as #krate::Message>::STREAM_CODEC.is_some(),
                #text
            );
        }
    });
    quote! {
        const _: () = {
            #(#checks)*
        };
    }
}
