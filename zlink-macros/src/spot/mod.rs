//! `#[spot(type = "...", relocation = ...)]`: turns an impl block of `&mut self`
//! `#[handler]` methods into a Spot type's dispatch, its registration and a typed client
//! addressed by global ID.

mod args;
mod client;
mod dispatch;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{Ident, ImplItem, ItemImpl, Type};

use crate::checks;
use crate::handler::{is_handler_attr, Flavor, Handler};
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

/// Expands `#[spot(...)]` on `item`. On error the impl block is still emitted (without its
/// `#[handler]` markers) so the only errors the user sees are ours.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut block: ItemImpl = match syn::parse2(item.clone()) {
        Ok(block) => block,
        Err(_) => {
            let error = syn::Error::new(
                item.span(),
                "#[spot(...)] goes on an `impl` block whose methods are marked #[handler]",
            )
            .to_compile_error();
            return quote!(#error #item);
        }
    };
    let handlers = take_handlers(&mut block);
    let generated = SpotArgs::parse(args)
        .and_then(|args| generate(&block, args, handlers))
        .unwrap_or_else(syn::Error::into_compile_error);
    quote! {
        #block
        #generated
    }
}

fn take_handlers(block: &mut ItemImpl) -> Vec<syn::Result<Handler>> {
    let mut handlers = Vec::new();
    for item in &mut block.items {
        let ImplItem::Fn(method) = item else { continue };
        let Some(index) = method.attrs.iter().position(is_handler_attr) else {
            continue;
        };
        let marker = method.attrs.remove(index);
        let mut parsed = Handler::parse(method, &marker, Flavor::Spot);
        if let Some(extra) = method.attrs.iter().find(|a| is_handler_attr(a)) {
            let error = syn::Error::new_spanned(extra, "#[handler] is given twice");
            parsed = Err(crate::combine(parsed.err(), error));
        }
        method.attrs.retain(|a| !is_handler_attr(a));
        handlers.push(parsed);
    }
    handlers
}

fn generate(
    block: &ItemImpl,
    args: SpotArgs,
    handlers: Vec<syn::Result<Handler>>,
) -> syn::Result<TokenStream> {
    let self_ident = check_block(block)?;
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
    if let Err(e) = checks::no_client_name_clash(&checked, &CLIENT_OWN_METHODS) {
        errors = Some(crate::combine(errors, e));
    }
    if let Some(errors) = errors {
        return Err(errors);
    }
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

/// The block must be an inherent, non-generic impl of a named type; returns the type's name.
fn check_block(block: &ItemImpl) -> syn::Result<&Ident> {
    if let Some((_, path, _)) = &block.trait_ {
        return Err(syn::Error::new_spanned(
            path,
            "#[spot(...)] goes on an inherent `impl Type` block, not a trait impl",
        ));
    }
    if !block.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &block.generics,
            "#[spot(...)] does not support generic impl blocks; declare a concrete Spot type",
        ));
    }
    match &*block.self_ty {
        Type::Path(p) if p.qself.is_none() => match p.path.segments.last() {
            Some(last) if last.arguments.is_empty() => Ok(&last.ident),
            _ => Err(syn::Error::new_spanned(
                p,
                "#[spot(...)] needs a named type without generic arguments",
            )),
        },
        other => Err(syn::Error::new_spanned(
            other,
            "#[spot(...)] needs a named type, e.g. `impl Room`",
        )),
    }
}
