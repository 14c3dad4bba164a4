//! `#[spot(type = "...", relocation = ...)]`: turns an impl block of `&mut self`
//! `#[handler]` methods into a Spot type's dispatch, its registration and a typed client
//! addressed by global ID.

mod args;
mod client;
mod dispatch;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Ident, ItemImpl, Type};

use crate::checks;
use crate::handler::{Flavor, Handler};
use crate::handler_block::{self, BlockKind};
use args::SpotArgs;

/// Names the generated client defines itself; a handler may not take them.
const CLIENT_OWN_METHODS: [&str; 2] = ["new", "id"];

/// Everything generation needs about one annotated impl block.
pub(crate) struct SpotBlock<'a> {
    pub(crate) self_ty: &'a Type,
    pub(crate) client: Ident,
    pub(crate) handlers: Vec<Handler>,
    pub(crate) args: SpotArgs,
}

/// How `#[spot(...)]` words its block errors and parses its handlers.
const BLOCK: BlockKind = BlockKind {
    attr: "#[spot(...)]",
    flavor: Flavor::Spot,
    generic_hint: "declare a concrete Spot type",
    example: "Room",
};

/// Expands `#[spot(...)]` on `item`. On error the impl block is still emitted (without its
/// `#[handler]` markers) so the only errors the user sees are ours.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut block = match handler_block::parse(item, &BLOCK) {
        Ok(block) => block,
        Err(error) => return error,
    };
    let handlers = handler_block::take_handlers(&mut block, &BLOCK);
    let generated = SpotArgs::parse(args)
        .and_then(|args| generate(&block, args, handlers))
        .unwrap_or_else(syn::Error::into_compile_error);
    quote! {
        #block
        #generated
    }
}

fn generate(
    block: &ItemImpl,
    args: SpotArgs,
    handlers: Vec<syn::Result<Handler>>,
) -> syn::Result<TokenStream> {
    let self_ident = handler_block::self_name(block, &BLOCK)?;
    let checked = handler_block::checked(handlers, &CLIENT_OWN_METHODS)?;
    let client = args
        .client
        .clone()
        .unwrap_or_else(|| format_ident!("{}Client", self_ident));
    let spot = SpotBlock {
        self_ty: &block.self_ty,
        client,
        handlers: checked,
        args,
    };
    let dispatch = dispatch::generate(&spot);
    let compile_checks = checks::generate(&spot.args.krate, &spot.handlers);
    let client = client::generate(&spot);
    Ok(quote! {
        #dispatch
        #compile_checks
        #client
    })
}
