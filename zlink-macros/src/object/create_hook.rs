//! A Spot's typed creation hook: an `#[on_create]` method of its `#[spot]` block, taking
//! the creation arguments the attribute declares (`create = OpenRoom`) and deciding, as
//! `Spot::on_create` does for the raw request.

use proc_macro2::{Span, TokenStream};
use quote::quote_spanned;
use syn::{Ident, ImplItem, ItemImpl, Path, Type};

/// The `#[on_create]` method, if the block has one.
#[derive(Default)]
pub(crate) struct CreateHook {
    method: Option<(Ident, Span)>,
}

impl CreateHook {
    /// Takes the marker out of the block (given once at most).
    pub(crate) fn take(block: &mut ItemImpl) -> syn::Result<Self> {
        let mut hook = CreateHook::default();
        for item in &mut block.items {
            let ImplItem::Fn(method) = item else { continue };
            let Some(index) = method.attrs.iter().position(|a| {
                a.path()
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "on_create")
            }) else {
                continue;
            };
            let span = syn::spanned::Spanned::span(method.attrs[index].path());
            if hook.method.is_some() {
                return Err(syn::Error::new(
                    span,
                    "#[on_create] is given twice in this block",
                ));
            }
            method.attrs.remove(index);
            hook.method = Some((method.sig.ident.clone(), span));
        }
        Ok(hook)
    }

    /// The marker's span, if any.
    pub(crate) fn span(&self) -> Option<Span> {
        self.method.as_ref().map(|(_, span)| *span)
    }

    /// `SpotHandlers::on_create_typed`, calling the method with the request decoded as
    /// `args` (declined, saying why, when it does not decode).
    pub(crate) fn forward(&self, krate: &Path, args: Option<&Type>) -> TokenStream {
        let (Some((method, span)), Some(args)) = (&self.method, args) else {
            return TokenStream::new();
        };
        let (ctx, request) = (
            Ident::new("__zlink_ctx", Span::mixed_site()),
            Ident::new("__zlink_request", Span::mixed_site()),
        );
        quote_spanned! {*span=>
            async fn on_create_typed(
                &mut self,
                #ctx: &#krate::object::SpotContext,
                #request: &#krate::Bytes,
            ) -> ::core::option::Option<#krate::object::CreateDecision> {
                ::core::option::Option::Some(
                    match #krate::__private::decode_create::<#args>(#request) {
                        ::core::result::Result::Ok(args) => Self::#method(self, args, #ctx).await,
                        ::core::result::Result::Err(error) => #krate::object::CreateDecision::Reject(
                            #krate::Bytes::from(::std::format!(
                                "the creation arguments are not a {}: {error}",
                                ::core::stringify!(#args)
                            )),
                        ),
                    },
                )
            }
        }
    }
}
