//! A session block's marked callbacks: `#[on_connected]`, `#[on_packet]` and
//! `#[on_disconnected]` methods, forwarded to from the generated `Session` impl.

use proc_macro2::{Span, TokenStream};
use quote::quote_spanned;
use syn::{Ident, ImplItem, ItemImpl, Path};

/// The markers, each taking its value (if any) after `&mut self` and the context last.
const MARKERS: [&str; 4] = [
    "on_connected",
    "on_packet",
    "on_disconnected",
    "on_actor_binding_replaced",
];

/// The marked methods of a block.
#[derive(Default)]
pub(crate) struct Hooks {
    hooks: Vec<(&'static str, Ident, Span)>,
}

impl Hooks {
    /// Takes the markers out of the block (each given once at most).
    pub(crate) fn take(block: &mut ItemImpl) -> syn::Result<Self> {
        let mut hooks = Hooks::default();
        let mut errors: Option<syn::Error> = None;
        for item in &mut block.items {
            let ImplItem::Fn(method) = item else { continue };
            let mut index = 0;
            while index < method.attrs.len() {
                let attr = &method.attrs[index];
                let name = attr.path().segments.last().map(|s| s.ident.to_string());
                let Some(marker) = MARKERS.iter().find(|m| name.as_deref() == Some(**m)) else {
                    index += 1;
                    continue;
                };
                let span = syn::spanned::Spanned::span(attr.path());
                if hooks.hooks.iter().any(|(m, _, _)| m == marker) {
                    let error =
                        syn::Error::new(span, format!("#[{marker}] is given twice in this block"));
                    errors = Some(crate::combine(errors, error));
                } else if method.sig.asyncness.is_none() {
                    let error = syn::Error::new_spanned(
                        method.sig.fn_token,
                        format!("a #[{marker}] method must be `async fn`"),
                    );
                    errors = Some(crate::combine(errors, error));
                } else {
                    hooks.hooks.push((marker, method.sig.ident.clone(), span));
                }
                method.attrs.remove(index);
            }
        }
        match errors {
            Some(errors) => Err(errors),
            None => Ok(hooks),
        }
    }

    /// The `Session` methods that forward to the marked ones.
    pub(crate) fn forward(&self, krate: &Path) -> TokenStream {
        let ctx = Ident::new("__zlink_ctx", Span::mixed_site());
        let value = Ident::new("__zlink_value", Span::mixed_site());
        self.hooks
            .iter()
            .map(|(marker, method, span)| match *marker {
                "on_connected" => quote_spanned! {*span=>
                    fn on_connected<'__zlink_a>(
                        &'__zlink_a mut self,
                        #ctx: &'__zlink_a #krate::session::SessionContext,
                    ) -> #krate::BoxFuture<'__zlink_a, #krate::Result<()>> {
                        ::std::boxed::Box::pin(async move {
                            Self::#method(self, #ctx)
                                .await
                                .map_err(#krate::__private::into_error)
                        })
                    }
                },
                "on_packet" => quote_spanned! {*span=>
                    fn on_packet<'__zlink_a>(
                        &'__zlink_a mut self,
                        #ctx: &'__zlink_a #krate::session::SessionContext,
                        #value: #krate::session::Packet,
                    ) -> #krate::BoxFuture<'__zlink_a, #krate::Result<()>> {
                        ::std::boxed::Box::pin(async move {
                            Self::#method(self, #value, #ctx)
                                .await
                                .map_err(#krate::__private::into_error)
                        })
                    }
                },
                "on_actor_binding_replaced" => quote_spanned! {*span=>
                    fn on_actor_binding_replaced<'__zlink_a>(
                        &'__zlink_a mut self,
                        #ctx: &'__zlink_a #krate::session::SessionContext,
                        #value: #krate::object::ActorRef,
                    ) -> #krate::BoxFuture<'__zlink_a, ()> {
                        ::std::boxed::Box::pin(Self::#method(self, #value, #ctx))
                    }
                },
                _ => quote_spanned! {*span=>
                    fn on_disconnected<'__zlink_a>(
                        &'__zlink_a mut self,
                        #ctx: &'__zlink_a #krate::session::SessionContext,
                        #value: #krate::session::CloseReason,
                    ) -> #krate::BoxFuture<'__zlink_a, ()> {
                        ::std::boxed::Box::pin(Self::#method(self, #value, #ctx))
                    }
                },
            })
            .collect()
    }
}
