//! A Spot's membership callbacks in its `#[spot]` block: `#[on_actor_join]`,
//! `#[on_joined_actor]`, `#[on_leave_actor]` and `#[on_disconnect_actor]` methods, forwarded from the generated
//! `SpotHandlers`. They belong to a Spot that takes Actors (`actors = Player`).

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::{Attribute, Ident, ImplItem, ItemImpl, Path};

/// The three callbacks, each the method that implements it.
#[derive(Default)]
pub(crate) struct MemberHooks {
    join: Option<(Ident, Span)>,
    joined: Option<(Ident, Span)>,
    left: Option<(Ident, Span)>,
    disconnected: Option<(Ident, Span)>,
}

const NAMES: [&str; 4] = [
    "on_actor_join",
    "on_joined_actor",
    "on_leave_actor",
    "on_disconnect_actor",
];

fn hook_name(attr: &Attribute) -> Option<&'static str> {
    let last = attr.path().segments.last()?.ident.to_string();
    NAMES.into_iter().find(|name| *name == last)
}

impl MemberHooks {
    /// Takes the callback markers out of the block (each may be given once).
    pub(crate) fn take(block: &mut ItemImpl) -> syn::Result<Self> {
        let mut hooks = MemberHooks::default();
        let mut errors: Option<syn::Error> = None;
        for item in &mut block.items {
            let ImplItem::Fn(method) = item else { continue };
            let marked: Vec<(usize, &'static str, Span)> = method
                .attrs
                .iter()
                .enumerate()
                .filter_map(|(i, a)| {
                    hook_name(a).map(|n| (i, n, syn::spanned::Spanned::span(a.path())))
                })
                .collect();
            for (_, name, span) in &marked {
                let slot = match *name {
                    "on_actor_join" => &mut hooks.join,
                    "on_joined_actor" => &mut hooks.joined,
                    "on_leave_actor" => &mut hooks.left,
                    _ => &mut hooks.disconnected,
                };
                if slot.is_some() {
                    let error =
                        syn::Error::new(*span, format!("#[{name}] is given twice in this block"));
                    errors = Some(crate::combine(errors, error));
                } else {
                    *slot = Some((method.sig.ident.clone(), *span));
                }
            }
            for (index, _, _) in marked.into_iter().rev() {
                method.attrs.remove(index);
            }
        }
        match errors {
            Some(errors) => Err(errors),
            None => Ok(hooks),
        }
    }

    /// The first callback marker, if any.
    pub(crate) fn first(&self) -> Option<(&'static str, Span)> {
        [&self.join, &self.joined, &self.left, &self.disconnected]
            .into_iter()
            .zip(NAMES)
            .find_map(|(hook, name)| hook.as_ref().map(|(_, span)| (name, *span)))
    }

    /// The `SpotHandlers` methods that call the marked ones.
    pub(crate) fn forward(&self, krate: &Path) -> TokenStream {
        let (ctx, actor, request) = (
            Ident::new("__zlink_ctx", Span::mixed_site()),
            Ident::new("__zlink_actor", Span::mixed_site()),
            Ident::new("__zlink_request", Span::mixed_site()),
        );
        let join = self.join.as_ref().map(|(method, span)| {
            quote_spanned! {*span=>
                async fn on_actor_join(
                    &mut self,
                    #ctx: &#krate::object::SpotContext,
                    #actor: &#krate::object::ActorRef,
                    #request: #krate::Bytes,
                ) -> #krate::object::JoinDecision {
                    Self::#method(self, #actor, #request, #ctx).await
                }
            }
        });
        let notice = |hook: &Option<(Ident, Span)>, name: &str| {
            hook.as_ref().map(|(method, span)| {
                let name = Ident::new(name, Span::call_site());
                quote_spanned! {*span=>
                    async fn #name(
                        &mut self,
                        #ctx: &#krate::object::SpotContext,
                        #actor: &#krate::object::ActorRef,
                    ) {
                        Self::#method(self, #actor, #ctx).await
                    }
                }
            })
        };
        let joined = notice(&self.joined, "on_joined_actor");
        let left = notice(&self.left, "on_leave_actor");
        let disconnected = notice(&self.disconnected, "on_disconnect_actor");
        quote! { #join #joined #left #disconnected }
    }
}
