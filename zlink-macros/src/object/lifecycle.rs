//! Lifecycle hooks written in the `#[spot]` / `#[actor]` block itself: `#[on_initialize]`,
//! `#[on_timer]`, `#[on_closing]` (and an Actor's `#[on_join_completed]`) methods. When a
//! block has any, the macro writes the `Spot` / `Actor` impl that forwards to them, so the
//! application writes no `impl Spot` of its own and needs no `#[zlink::async_trait]`.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::{Ident, ImplItem, ItemImpl, Path, Type};

use super::ObjectKind;

/// The markers of one kind, each with the arguments its method takes after `&mut self`
/// (the value first, the context last, as handlers take them).
fn markers(kind: &ObjectKind) -> &'static [&'static str] {
    if kind.noun == "Spot" {
        &["on_initialize", "on_timer", "on_closing"]
    } else {
        &[
            "on_initialize",
            "on_timer",
            "on_join_completed",
            "on_closing",
        ]
    }
}

/// The marked methods of a block.
#[derive(Default)]
pub(crate) struct Lifecycle {
    hooks: Vec<(&'static str, Ident, Span)>,
}

impl Lifecycle {
    /// Takes the markers out of the block (each given once at most).
    pub(crate) fn take(block: &mut ItemImpl, kind: &ObjectKind) -> syn::Result<Self> {
        let mut lifecycle = Lifecycle::default();
        let mut errors: Option<syn::Error> = None;
        for item in &mut block.items {
            let ImplItem::Fn(method) = item else { continue };
            let mut index = 0;
            while index < method.attrs.len() {
                let attr = &method.attrs[index];
                let name = attr.path().segments.last().map(|s| s.ident.to_string());
                let Some(marker) = markers(kind).iter().find(|m| name.as_deref() == Some(**m))
                else {
                    index += 1;
                    continue;
                };
                let span = syn::spanned::Spanned::span(attr.path());
                if lifecycle.hooks.iter().any(|(m, _, _)| m == marker) {
                    let error =
                        syn::Error::new(span, format!("#[{marker}] is given twice in this block"));
                    errors = Some(crate::combine(errors, error));
                } else {
                    lifecycle
                        .hooks
                        .push((marker, method.sig.ident.clone(), span));
                }
                method.attrs.remove(index);
            }
        }
        match errors {
            Some(errors) => Err(errors),
            None => Ok(lifecycle),
        }
    }

    /// The `Spot` / `Actor` impl forwarding to the marked methods; nothing when the block
    /// marks none (the application writes the impl, as before).
    pub(crate) fn generate(&self, krate: &Path, kind: &ObjectKind, self_ty: &Type) -> TokenStream {
        if self.hooks.is_empty() {
            return TokenStream::new();
        }
        let context = Ident::new(kind.context, Span::call_site());
        let object_trait = Ident::new(kind.noun, Span::call_site());
        let (ctx, value) = (
            Ident::new("__zlink_ctx", Span::mixed_site()),
            Ident::new("__zlink_value", Span::mixed_site()),
        );
        let methods = self
            .hooks
            .iter()
            .map(|(marker, method, span)| match *marker {
                "on_initialize" => quote_spanned! {*span=>
                    async fn on_initialize(
                        &mut self,
                        #ctx: &#krate::object::#context,
                    ) -> #krate::Result<()> {
                        Self::#method(self, #ctx).await
                    }
                },
                "on_timer" => quote_spanned! {*span=>
                    async fn on_timer(
                        &mut self,
                        #ctx: &#krate::object::#context,
                        #value: #krate::object::TimerTick,
                    ) -> #krate::Result<()> {
                        Self::#method(self, #value, #ctx).await
                    }
                },
                "on_join_completed" => quote_spanned! {*span=>
                    async fn on_join_completed(
                        &mut self,
                        #ctx: &#krate::object::#context,
                        #value: #krate::object::JoinOutcome,
                    ) {
                        Self::#method(self, #value, #ctx).await
                    }
                },
                _ => quote_spanned! {*span=>
                    async fn on_closing(
                        &mut self,
                        #ctx: &#krate::object::#context,
                        #value: #krate::object::ClosingReason,
                    ) {
                        Self::#method(self, #value, #ctx).await
                    }
                },
            });
        quote! {
            #[automatically_derived]
            #[#krate::async_trait]
            impl #krate::object::#object_trait for #self_ty {
                #(#methods)*
            }
        }
    }
}
