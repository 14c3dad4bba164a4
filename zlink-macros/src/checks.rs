//! Checks: syntactic ones made while expanding, and type-level ones emitted as code so the
//! compiler reports them at the user's own tokens.

use std::collections::HashMap;

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;

use crate::handler::Handler;

/// Two handlers for the same written message type.
pub(crate) fn no_duplicates(handlers: &[Handler]) -> syn::Result<()> {
    let mut seen: HashMap<String, &Handler> = HashMap::new();
    let mut errors: Option<syn::Error> = None;
    for handler in handlers {
        let key = handler.message.to_token_stream().to_string();
        if let Some(first) = seen.get(&key) {
            let error = syn::Error::new_spanned(
                &handler.message,
                format!(
                    "two handlers for one packet in this group: `{}` already handles `{key}`",
                    first.method
                ),
            );
            errors = Some(crate::combine(errors, error));
        } else {
            seen.insert(key, handler);
        }
    }
    errors.map_or(Ok(()), Err)
}

/// Handler names that would collide with the client's own methods (`own`).
pub(crate) fn no_client_name_clash(handlers: &[Handler], own: &[&str]) -> syn::Result<()> {
    let mut errors: Option<syn::Error> = None;
    for handler in handlers {
        let name = handler.method.to_string();
        if own.contains(&name.as_str()) {
            let message =
                format!("the generated client has its own `{name}` method; rename this handler");
            errors = Some(crate::combine(
                errors,
                syn::Error::new_spanned(&handler.method, message),
            ));
        }
    }
    errors.map_or(Ok(()), Err)
}

/// Compile-time checks: no two handlers' packet names are equal (names can be
/// overridden, so this needs the types).
///
/// "Is a Message" and "the reply is the request's" need no check of their own: the
/// dispatch code names `<M as Message>` at the message type's span and encodes each reply
/// through `__private::reply_payload` / `encode_reply` at the return type's span, whose
/// one bound (`ReplyOf`) reports a wrong reply type once, there.
pub(crate) fn generate(krate: &syn::Path, handlers: &[Handler]) -> TokenStream {
    let mut distinct = Vec::new();
    for (i, later) in handlers.iter().enumerate() {
        for earlier in &handlers[..i] {
            let (a, b) = (&earlier.message, &later.message);
            let text = format!(
                "two handlers for one packet name: `{}` and `{}` handle messages with the same PACKET_NAME",
                earlier.method, later.method
            );
            distinct.push(quote_spanned! {b.span()=>
                ::core::assert!(
                    !#krate::__private::same_packet_name(
                        <#a as #krate::Message>::PACKET_NAME,
                        <#b as #krate::Message>::PACKET_NAME,
                    ),
                    #text
                );
            });
        }
    }
    quote! {
        const _: () = {
            #(#distinct)*
        };
    }
}
