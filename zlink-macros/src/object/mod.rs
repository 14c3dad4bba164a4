//! `#[spot(type = "...", relocation = ...)]` and `#[actor(...)]`: turn an impl block of
//! `&mut self` `#[handler]` methods into a Spot or Actor type's dispatch, its registration
//! and a typed client addressed by global ID. The two differ only in names.

mod args;
mod client;
mod create_hook;
mod dispatch;
mod fallback;
mod lifecycle;
mod members;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Ident, ItemImpl, Type};

use crate::checks;
use crate::handler::{Flavor, Handler};
use crate::handler_block::{self, BlockKind};
use args::ObjectArgs;
use create_hook::CreateHook;
use lifecycle::Lifecycle;
use members::MemberHooks;

/// Names the generated client defines itself; a handler may not take them.
const CLIENT_OWN_METHODS: [&str; 4] = ["new", "id", "get_or_create", "instance"];

/// What differs between `#[spot]` and `#[actor]`: the words and the runtime's names.
pub(crate) struct ObjectKind {
    pub(crate) block: BlockKind,
    /// The attribute's name, e.g. `spot`.
    pub(crate) attr_name: &'static str,
    /// The kind as a word, e.g. `Spot`.
    pub(crate) noun: &'static str,
    /// An example stable type, e.g. `room`.
    pub(crate) example_type: &'static str,
    pub(crate) handlers_trait: &'static str,
    pub(crate) context: &'static str,
    pub(crate) type_struct: &'static str,
    /// The generated registration function and the builder method it feeds.
    pub(crate) register: &'static str,
}

pub(crate) const SPOT: ObjectKind = ObjectKind {
    block: BlockKind {
        attr: "#[spot(...)]",
        flavor: Flavor::Spot,
        generic_hint: "declare a concrete Spot type",
        example: "Room",
    },
    attr_name: "spot",
    noun: "Spot",
    example_type: "room",
    handlers_trait: "SpotHandlers",
    context: "SpotContext",
    type_struct: "SpotType",
    register: "spot_type",
};

pub(crate) const ACTOR: ObjectKind = ObjectKind {
    block: BlockKind {
        attr: "#[actor(...)]",
        flavor: Flavor::Actor,
        generic_hint: "declare a concrete Actor type",
        example: "Player",
    },
    attr_name: "actor",
    noun: "Actor",
    example_type: "player",
    handlers_trait: "ActorHandlers",
    context: "ActorContext",
    type_struct: "ActorType",
    register: "actor_type",
};

/// Everything generation needs about one annotated impl block.
pub(crate) struct ObjectBlock<'a> {
    pub(crate) kind: &'static ObjectKind,
    pub(crate) self_ty: &'a Type,
    pub(crate) client: Ident,
    pub(crate) handlers: Vec<Handler>,
    pub(crate) members: MemberHooks,
    pub(crate) create_hook: CreateHook,
    pub(crate) lifecycle: Lifecycle,
    pub(crate) args: ObjectArgs,
}

/// Expands `#[spot(...)]` or `#[actor(...)]` on `item`. On error the impl block is still
/// emitted (without its `#[handler]` markers), with stand-ins for the generated items, so
/// the only errors the user sees are ours.
pub(crate) fn expand(
    kind: &'static ObjectKind,
    args: TokenStream,
    item: TokenStream,
) -> TokenStream {
    let mut block = match handler_block::parse(item, &kind.block) {
        Ok(block) => block,
        Err(error) => return error,
    };
    let unmarked = handler_block::unmarked_handlers(&block, &kind.block);
    let handlers = handler_block::take_handlers(&mut block, &kind.block);
    let members = MemberHooks::take(&mut block);
    let create_hook = CreateHook::take(&mut block);
    let lifecycle = Lifecycle::take(&mut block, kind);
    let parsed = ObjectArgs::parse(args, kind);
    let (krate, client) = match &parsed {
        Ok(args) => (Some(args.krate.clone()), args.client.clone()),
        Err(_) => (None, None),
    };
    let generated = match parsed.and_then(|args| {
        generate(
            kind,
            &block,
            args,
            handlers,
            members?,
            create_hook?,
            lifecycle?,
        )
    }) {
        Ok(generated) => generated,
        Err(error) => {
            // The items the program names stand in, so our error is the only one.
            let error = error.into_compile_error();
            let stand_in = handler_block::self_name(&block, &kind.block)
                .ok()
                .map(|name| fallback::generate(kind, &block, name, krate, client));
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
    kind: &'static ObjectKind,
    block: &ItemImpl,
    args: ObjectArgs,
    handlers: Vec<syn::Result<Handler>>,
    members: MemberHooks,
    create_hook: CreateHook,
    lifecycle: Lifecycle,
) -> syn::Result<TokenStream> {
    let self_ident = handler_block::self_name(block, &kind.block)?;
    if let (Some(span), None) = (create_hook.span(), &args.create) {
        return Err(syn::Error::new(
            span,
            "#[on_create] takes the Spot's creation arguments: declare their type in the attribute, e.g. #[spot(type = \"room\", relocation = disable, create = OpenRoom)]",
        ));
    }
    if let Some(span) = args.instance {
        let clash = if args.actors.is_some() {
            Some("takes no Actors (`actors = ...`)")
        } else if args.create.is_some() || create_hook.span().is_some() {
            Some("is never created with arguments (`create = ...`, #[on_create]): its first message activates it")
        } else {
            None
        };
        if let Some(clash) = clash {
            return Err(syn::Error::new(
                span,
                format!("an Instance Spot type {clash}"),
            ));
        }
    }
    if let (Some((name, span)), None) = (members.first(), &args.actors) {
        let message = if kind.noun == "Spot" {
            format!("#[{name}] is a membership callback: it runs only on a Spot that takes Actors; declare their type in the attribute, e.g. #[spot(type = \"room\", relocation = disable, actors = Player)]")
        } else {
            format!("#[{name}] is a Spot's membership callback; an Actor has none (it hears its Join's outcome in Actor::on_join_completed)")
        };
        return Err(syn::Error::new(span, message));
    }
    let checked = handler_block::checked(handlers, &CLIENT_OWN_METHODS)?;
    let client = args
        .client
        .clone()
        .unwrap_or_else(|| format_ident!("{}Client", self_ident));
    let spot = ObjectBlock {
        kind,
        self_ty: &block.self_ty,
        client,
        handlers: checked,
        members,
        create_hook,
        lifecycle,
        args,
    };
    let dispatch = dispatch::generate(&spot);
    let compile_checks = checks::generate(&spot.args.krate, &spot.handlers);
    let client = client::generate(&spot);
    let lifecycle = spot
        .lifecycle
        .generate(&spot.args.krate, kind, spot.self_ty);
    Ok(quote! {
        #dispatch
        #compile_checks
        #client
        #lifecycle
    })
}
