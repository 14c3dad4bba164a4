//! `#[channel(server)]`: turns an impl block of `#[handler]` methods into a handler group
//! and a typed client.

mod args;
mod client;
mod fallback;
mod group;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Ident, ItemImpl, Type};

use crate::checks;
use crate::handler::{Flavor, Handler};
use crate::handler_block::{self, BlockKind};
use args::ChannelArgs;

/// Names the generated client defines itself; a handler may not take them.
const CLIENT_OWN_METHODS: [&str; 3] = ["new", "on_default_channel", "channel_name"];

/// Everything generation needs about one annotated impl block.
pub(crate) struct Group<'a> {
    pub(crate) self_ty: &'a Type,
    pub(crate) client: Ident,
    pub(crate) handlers: Vec<Handler>,
    pub(crate) args: ChannelArgs,
}

/// How `#[channel(server)]` words its block errors and parses its handlers.
const BLOCK: BlockKind = BlockKind {
    attr: "#[channel(server)]",
    flavor: Flavor::Channel,
    generic_hint: "serve a concrete type (a newtype around the generic one works)",
    example: "Pricing",
};

/// Expands `#[channel(...)]` on `item`. On error the impl block is still emitted (without its
/// `#[handler]` markers) so the only errors the user sees are ours.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut block = match handler_block::parse(item, &BLOCK) {
        Ok(block) => block,
        Err(error) => return error,
    };
    let unmarked = handler_block::unmarked_handlers(&block, &BLOCK);
    let handlers = handler_block::take_handlers(&mut block, &BLOCK);
    let parsed = ChannelArgs::parse(args);
    let (krate, client, default_name) = match &parsed {
        Ok(args) => (
            Some(args.krate.clone()),
            args.client.clone(),
            args.default_name.clone(),
        ),
        Err(_) => (None, None, None),
    };
    let generated = match parsed.and_then(|args| generate(&block, args, handlers)) {
        Ok(generated) => generated,
        Err(error) => {
            // The items the program names stand in, so our error is the only one.
            let error = error.into_compile_error();
            let stand_in = handler_block::self_name(&block, &BLOCK)
                .ok()
                .map(|name| fallback::generate(&block, name, krate, client, default_name));
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
    args: ChannelArgs,
    handlers: Vec<syn::Result<Handler>>,
) -> syn::Result<TokenStream> {
    let self_ident = handler_block::self_name(block, &BLOCK)?;
    let checked = handler_block::checked(handlers, &CLIENT_OWN_METHODS)?;
    if checked.is_empty() {
        return Err(syn::Error::new_spanned(
            &block.self_ty,
            "this #[channel(server)] block has no #[handler] methods",
        ));
    }
    let client = args
        .client
        .clone()
        .unwrap_or_else(|| format_ident!("{}Client", self_ident));
    let group = Group {
        self_ty: &block.self_ty,
        client,
        handlers: checked,
        args,
    };
    let group_impl = group::generate(&group);
    let compile_checks = checks::generate(&group.args.krate, &group.handlers);
    let client_impl = client::generate(&group);
    Ok(quote! {
        #group_impl
        #compile_checks
        #client_impl
    })
}
