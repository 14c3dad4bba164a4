//! One `#[handler]` method of a channel group, a Spot, an Actor or a session: its signature, checked and
//! reduced to what generation needs.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, GenericArgument, Ident, ImplItemFn, PathArguments, ReturnType, Type};

/// Whether a handler answers requests or consumes one-way sends.
pub(crate) enum HandlerKind {
    /// Returns `Result<Reply, E>` (the dispatch checks `Reply` against the request's).
    Request,
    /// Returns `Result<(), E>`.
    Send,
}

/// A checked `#[handler]` method.
pub(crate) struct Handler {
    pub(crate) method: Ident,
    pub(crate) message: Type,
    pub(crate) kind: HandlerKind,
    pub(crate) context_by_ref: bool,
    pub(crate) return_span: Span,
    pub(crate) docs: Vec<Attribute>,
    /// A Spot's `#[subscribe(channel = .., topic = ..)]`: the Logical Multicast topic it
    /// takes (such a handler is one-way, and no client method calls it).
    pub(crate) subscription: Option<Subscription>,
}

/// The `(channel, topic)` of a `#[subscribe]` handler.
pub(crate) struct Subscription {
    pub(crate) channel: syn::LitStr,
    pub(crate) topic: syn::LitStr,
}

/// Whether an attribute is `#[subscribe(..)]`.
pub(crate) fn is_subscribe_attr(attr: &Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "subscribe")
}

impl Subscription {
    /// Reads `#[subscribe(channel = "..", topic = "..")]`.
    pub(crate) fn parse(attr: &Attribute) -> syn::Result<Subscription> {
        const SHAPE: &str = "expected #[subscribe(channel = \"ChannelName\", topic = \"topic\")]";
        let (mut channel, mut topic) = (None, None);
        attr.parse_nested_meta(|meta| {
            let slot = if meta.path.is_ident("channel") {
                &mut channel
            } else if meta.path.is_ident("topic") {
                &mut topic
            } else {
                return Err(meta.error(format!("unknown key; {SHAPE}")));
            };
            if slot.is_some() {
                return Err(meta.error("given twice"));
            }
            let value: syn::LitStr = meta.value()?.parse()?;
            if value.value().is_empty() || value.value().len() > 255 {
                return Err(syn::Error::new_spanned(&value, "must be 1..=255 bytes"));
            }
            *slot = Some(value);
            Ok(())
        })
        .map_err(|e| {
            if matches!(attr.meta, syn::Meta::Path(_)) {
                syn::Error::new_spanned(attr, SHAPE)
            } else {
                e
            }
        })?;
        match (channel, topic) {
            (Some(channel), Some(topic)) => Ok(Subscription { channel, topic }),
            _ => Err(syn::Error::new_spanned(attr, SHAPE)),
        }
    }
}

/// Which kind of block the handler is in: it decides the receiver and the context type.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// `#[channel(server)]`: `&self`, `HandlerContext` (calls run concurrently).
    Channel,
    /// `#[spot(...)]`: `&mut self`, `SpotContext` (one turn at a time).
    Spot,
    /// `#[actor(...)]`: `&mut self`, `ActorContext` (one turn at a time).
    Actor,
    /// `#[session]`: `&mut self`, `SessionContext` (one packet at a time).
    Session,
}

impl Flavor {
    pub(crate) fn context(self) -> &'static str {
        match self {
            Flavor::Channel => "HandlerContext",
            Flavor::Spot => "SpotContext",
            Flavor::Actor => "ActorContext",
            Flavor::Session => "SessionContext",
        }
    }

    fn receiver(self) -> &'static str {
        match self {
            Flavor::Channel => "&self",
            Flavor::Spot | Flavor::Actor | Flavor::Session => "&mut self",
        }
    }

    fn shape(self) -> String {
        format!(
            "expected `async fn name({}, message: M, ctx: &{}) -> Result<Reply, E>`, or `Result<(), E>` for a one-way send",
            self.receiver(),
            self.context()
        )
    }
}

/// Whether an attribute is `#[handler]` (also `#[zlink::handler]` or any path ending in it).
pub(crate) fn is_handler_attr(attr: &Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "handler")
}

impl Handler {
    /// Checks a method marked `#[handler]`; the attribute must already be removed from it.
    pub(crate) fn parse(
        method: &ImplItemFn,
        marker: &Attribute,
        flavor: Flavor,
    ) -> syn::Result<Handler> {
        let shape = flavor.shape();
        if !matches!(marker.meta, syn::Meta::Path(_)) {
            return Err(syn::Error::new_spanned(
                &marker.meta,
                "#[handler] takes no arguments: the message type decides the packet name",
            ));
        }
        let sig = &method.sig;
        if sig.asyncness.is_none() {
            return Err(syn::Error::new_spanned(
                sig.fn_token,
                format!("a #[handler] method must be `async fn`; {shape}"),
            ));
        }
        if !sig.generics.params.is_empty() {
            return Err(syn::Error::new_spanned(
                &sig.generics,
                "a #[handler] method cannot be generic: each handler serves one message type",
            ));
        }
        let inputs: Vec<&FnArg> = sig.inputs.iter().collect();
        check_receiver(inputs.first().copied(), sig.ident.span(), flavor)?;
        if inputs.len() != 3 {
            return Err(syn::Error::new_spanned(
                &sig.inputs,
                format!(
                    "a #[handler] takes 3 arguments (`{}`, the message, the context), found {}; {shape}",
                    flavor.receiver(),
                    inputs.len()
                ),
            ));
        }
        let message = message_type(inputs[1], flavor)?;
        let context_by_ref = context_type(inputs[2], flavor)?;
        let (kind, return_span) = kind_from_return(&sig.output, sig.ident.span(), &shape)?;
        let docs = method
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("doc"))
            .cloned()
            .collect();
        Ok(Handler {
            method: sig.ident.clone(),
            message,
            kind,
            context_by_ref,
            return_span,
            docs,
            subscription: None,
        })
    }
}

fn check_receiver(first: Option<&FnArg>, fn_span: Span, flavor: Flavor) -> syn::Result<()> {
    let message = match flavor {
        Flavor::Channel => "a #[handler] takes `&self` first: the group is shared by concurrent calls, so handlers cannot take `self` or `&mut self` (a stateful object that runs one turn at a time is a Spot: #[zlink::spot(...)])",
        Flavor::Spot => "a Spot #[handler] takes `&mut self` first: a Spot runs one turn at a time and owns its state, so its handlers mutate it directly",
        Flavor::Actor => "an Actor #[handler] takes `&mut self` first: an Actor runs one turn at a time and owns its state, so its handlers mutate it directly",
        Flavor::Session => "a session #[handler] takes `&mut self` first: a session handles one packet at a time and owns its connection's state, so its handlers mutate it directly",
    };
    let fits = |r: &syn::Receiver| {
        r.reference.is_some()
            && match flavor {
                Flavor::Channel => r.mutability.is_none(),
                Flavor::Spot | Flavor::Actor | Flavor::Session => r.mutability.is_some(),
            }
    };
    match first {
        Some(FnArg::Receiver(r)) if fits(r) => Ok(()),
        Some(FnArg::Receiver(r)) => Err(syn::Error::new_spanned(r, message)),
        Some(other) => Err(syn::Error::new_spanned(other, message)),
        None => Err(syn::Error::new(fn_span, message)),
    }
}

fn message_type(arg: &FnArg, flavor: Flavor) -> syn::Result<Type> {
    let FnArg::Typed(pat) = arg else {
        return Err(syn::Error::new_spanned(
            arg,
            "expected the message argument",
        ));
    };
    if is_context(&pat.ty, flavor) {
        return Err(syn::Error::new_spanned(
            &pat.ty,
            format!(
                "the message comes second and the context third: `({}, message: M, ctx: &{})`",
                flavor.receiver(),
                flavor.context()
            ),
        ));
    }
    if let Type::Reference(r) = &*pat.ty {
        return Err(syn::Error::new_spanned(
            r,
            "take the message by value (`message: M`), not by reference: the handler owns the decoded message",
        ));
    }
    Ok((*pat.ty).clone())
}

/// Whether a type is written as the flavor's context, by value or by reference (any path
/// to it).
fn is_context(ty: &Type, flavor: Flavor) -> bool {
    let ty = match ty {
        Type::Reference(r) if r.mutability.is_none() => &*r.elem,
        other => other,
    };
    matches!(ty, Type::Path(p) if p.qself.is_none()
        && p.path.segments.last().is_some_and(|s| s.ident == flavor.context()))
}

/// Returns whether the context is taken by reference.
fn context_type(arg: &FnArg, flavor: Flavor) -> syn::Result<bool> {
    let message = match flavor {
        Flavor::Channel => {
            "the third argument is the handler context: `ctx: &zlink::HandlerContext`"
        }
        Flavor::Spot => {
            "the third argument is the Spot context: `ctx: &zlink::object::SpotContext`"
        }
        Flavor::Actor => {
            "the third argument is the Actor context: `ctx: &zlink::object::ActorContext`"
        }
        Flavor::Session => {
            "the third argument is the session context: `ctx: &zlink::session::SessionContext`"
        }
    };
    let FnArg::Typed(pat) = arg else {
        return Err(syn::Error::new_spanned(arg, message));
    };
    if is_context(&pat.ty, flavor) {
        let by_ref = matches!(&*pat.ty, Type::Reference(_));
        if flavor != Flavor::Channel && !by_ref {
            return Err(syn::Error::new_spanned(
                &pat.ty,
                format!(
                    "take the context by reference: `ctx: &{}`",
                    flavor.context()
                ),
            ));
        }
        Ok(by_ref)
    } else {
        Err(syn::Error::new_spanned(&pat.ty, message))
    }
}

fn kind_from_return(
    output: &ReturnType,
    fn_span: Span,
    shape: &str,
) -> syn::Result<(HandlerKind, Span)> {
    let ReturnType::Type(_, ty) = output else {
        return Err(syn::Error::new(
            fn_span,
            format!("a #[handler] must return a Result; {shape}"),
        ));
    };
    let ok = match &**ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().and_then(|last| {
            if last.ident != "Result" {
                return None;
            }
            match &last.arguments {
                PathArguments::AngleBracketed(args) => match args.args.first() {
                    Some(GenericArgument::Type(ok)) => Some(ok.clone()),
                    _ => None,
                },
                _ => None,
            }
        }),
        _ => None,
    };
    let Some(ok) = ok else {
        return Err(syn::Error::new_spanned(
            ty,
            format!("a #[handler] must return a Result; {shape}"),
        ));
    };
    let kind = match &ok {
        Type::Tuple(t) if t.elems.is_empty() => HandlerKind::Send,
        _ => HandlerKind::Request,
    };
    Ok((kind, ok.span()))
}
