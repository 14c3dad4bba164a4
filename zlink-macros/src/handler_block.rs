//! What `#[channel(server)]` and `#[spot(...)]` share about the impl block they annotate:
//! parsing it, taking out its `#[handler]` methods, checking the block's shape and the
//! handlers together (every error reported at once).

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::spanned::Spanned;
use syn::{Ident, ImplItem, ItemImpl, Type};

use crate::checks;
use crate::handler::{
    is_handler_attr, is_subscribe_attr, Flavor, Handler, HandlerKind, Subscription,
};

/// Which attribute the block carries, for messages and handler parsing.
pub(crate) struct BlockKind {
    /// How the attribute is written in messages, e.g. `#[channel(server)]`.
    pub(crate) attr: &'static str,
    /// The handlers' receiver and context.
    pub(crate) flavor: Flavor,
    /// What the generic-block message suggests instead.
    pub(crate) generic_hint: &'static str,
    /// An example type name for the "needs a named type" message.
    pub(crate) example: &'static str,
}

/// Parses `item` as an impl block; otherwise the error to emit (with the item kept).
pub(crate) fn parse(item: TokenStream, kind: &BlockKind) -> Result<ItemImpl, TokenStream> {
    syn::parse2(item.clone()).map_err(|_| {
        let error = syn::Error::new(
            item.span(),
            format!(
                "{} goes on an `impl` block whose methods are marked #[handler]",
                kind.attr
            ),
        )
        .to_compile_error();
        quote!(#error #item)
    })
}

/// Removes the `#[handler]` markers and checks each marked method; the errors are kept so
/// all of them are reported together.
pub(crate) fn take_handlers(block: &mut ItemImpl, kind: &BlockKind) -> Vec<syn::Result<Handler>> {
    let mut handlers = Vec::new();
    for item in &mut block.items {
        let ImplItem::Fn(method) = item else { continue };
        if let Some(index) = method.attrs.iter().position(is_subscribe_attr) {
            handlers.push(take_subscriber(method, index, kind));
            continue;
        }
        let Some(index) = method.attrs.iter().position(is_handler_attr) else {
            continue;
        };
        let marker = method.attrs.remove(index);
        let mut parsed = Handler::parse(method, &marker, kind.flavor);
        if let Some(extra) = method.attrs.iter().find(|a| is_handler_attr(a)) {
            let error = syn::Error::new_spanned(extra, "#[handler] is given twice");
            parsed = Err(crate::combine(parsed.err(), error));
        }
        method.attrs.retain(|a| !is_handler_attr(a));
        handlers.push(parsed);
    }
    handlers
}

/// A `#[subscribe(..)]` method: a one-way Spot handler taking a Logical Multicast topic.
fn take_subscriber(
    method: &mut syn::ImplItemFn,
    index: usize,
    kind: &BlockKind,
) -> syn::Result<Handler> {
    let marker = method.attrs.remove(index);
    method
        .attrs
        .retain(|a| !is_subscribe_attr(a) && !is_handler_attr(a));
    if kind.flavor != Flavor::Spot {
        return Err(syn::Error::new_spanned(
            &marker,
            "#[subscribe] is for Spot handlers: Logical Multicast delivers to Spots",
        ));
    }
    let subscription = Subscription::parse(&marker)?;
    let plain: syn::Attribute = syn::parse_quote!(#[handler]);
    let mut handler = Handler::parse(method, &plain, kind.flavor)?;
    if matches!(handler.kind, HandlerKind::Request) {
        return Err(syn::Error::new(
            handler.return_span,
            "a #[subscribe] handler is one-way: it returns `Result<(), E>` (nobody waits for a multicast event's reply)",
        ));
    }
    handler.subscription = Some(subscription);
    Ok(handler)
}

/// The checked handlers, or every error among them, their duplicates and their clashes
/// with the generated client's own methods (`own`).
pub(crate) fn checked(
    handlers: Vec<syn::Result<Handler>>,
    own: &[&str],
) -> syn::Result<Vec<Handler>> {
    let mut errors: Option<syn::Error> = None;
    let mut checked = Vec::new();
    for handler in handlers {
        match handler {
            Ok(h) => checked.push(h),
            Err(e) => errors = Some(crate::combine(errors, e)),
        }
    }
    if let Err(e) = checks::no_duplicates(&checked) {
        errors = Some(crate::combine(errors, e));
    }
    if let Err(e) = checks::no_client_name_clash(&checked, own) {
        errors = Some(crate::combine(errors, e));
    }
    match errors {
        Some(errors) => Err(errors),
        None => Ok(checked),
    }
}

/// The block must be an inherent, non-generic impl of a named type; returns the type's name.
pub(crate) fn self_name<'a>(block: &'a ItemImpl, kind: &BlockKind) -> syn::Result<&'a Ident> {
    let attr = kind.attr;
    if let Some((_, path, _)) = &block.trait_ {
        return Err(syn::Error::new_spanned(
            path,
            format!("{attr} goes on an inherent `impl Type` block, not a trait impl"),
        ));
    }
    if !block.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &block.generics,
            format!(
                "{attr} does not support generic impl blocks; {}",
                kind.generic_hint
            ),
        ));
    }
    match &*block.self_ty {
        Type::Path(p) if p.qself.is_none() => match p.path.segments.last() {
            Some(last) if last.arguments.is_empty() => Ok(&last.ident),
            _ => Err(syn::Error::new_spanned(
                p,
                format!("{attr} needs a named type without generic arguments"),
            )),
        },
        other => Err(syn::Error::new_spanned(
            other,
            format!("{attr} needs a named type, e.g. `impl {}`", kind.example),
        )),
    }
}

/// Warnings for methods that look like handlers (`async`, a receiver, a message and the
/// block's context type) but carry no `#[handler]`: such a method is never dispatched,
/// which a user who forgot the marker only finds at run time. Emitted as the use of a
/// deprecated item, the one warning a macro can raise on stable Rust; a helper that means
/// it says so with `#[allow(deprecated)]` on the method.
pub(crate) fn unmarked_handlers(block: &ItemImpl, kind: &BlockKind) -> TokenStream {
    let context = kind.flavor.context();
    let warnings = block.items.iter().filter_map(|item| {
        let ImplItem::Fn(method) = item else { return None };
        let signature = &method.sig;
        let allowed = method.attrs.iter().any(|a| {
            a.path().is_ident("allow") && a.to_token_stream().to_string().contains("deprecated")
        });
        // Marked as a handler or as one of the blocks' other callbacks.
        const MARKERS: [&str; 14] = [
            "subscribe",
            "on_create",
            "on_actor_join",
            "on_joined_actor",
            "on_leave_actor",
            "on_disconnect_actor",
            "on_initialize",
            "on_timer",
            "on_closing",
            "on_join_completed",
            "on_connected",
            "on_packet",
            "on_disconnected",
            "on_actor_binding_replaced",
        ];
        let marked = method.attrs.iter().any(|a| {
            is_handler_attr(a)
                || a.path()
                    .segments
                    .last()
                    .is_some_and(|s| MARKERS.iter().any(|m| s.ident == m))
        });
        if marked || signature.asyncness.is_none() || signature.inputs.len() != 3 || allowed {
            return None;
        }
        // A message is taken by value; `&ActorRef` and the like are other callbacks'.
        let syn::FnArg::Typed(message) = signature.inputs.iter().nth(1)? else { return None };
        if matches!(&*message.ty, Type::Reference(_)) {
            return None;
        }
        let syn::FnArg::Typed(last) = signature.inputs.last()? else { return None };
        let Type::Reference(reference) = &*last.ty else { return None };
        let Type::Path(path) = &*reference.elem else { return None };
        if path.path.segments.last()?.ident != context {
            return None;
        }
        let name = &signature.ident;
        let note = format!(
            "`{name}` takes a message and the {context} like a handler but has no #[handler], so no message reaches it; mark it #[handler] (or put #[allow(deprecated)] on it if it is a helper)"
        );
        Some(quote::quote_spanned! {name.span()=>
            const _: () = {
                #[deprecated(note = #note)]
                struct UnmarkedHandler;
                let _ = UnmarkedHandler;
            };
        })
    });
    quote!(#(#warnings)*)
}
