//! The generated typed client: addressed by the object's global ID only, one method per
//! handler (plus a `_with` form taking `CallOptions`).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::Ident;

use super::ObjectBlock;
use crate::handler::{Handler, HandlerKind};

fn local(name: &str) -> Ident {
    Ident::new(&format!("__zlink_{name}"), Span::mixed_site())
}

pub(crate) fn generate(spot: &ObjectBlock) -> TokenStream {
    let noun = spot.kind.noun;
    let krate = &spot.args.krate;
    let (runtime, id, f) = (local("runtime"), local("id"), local("f"));
    let self_ty = spot.self_ty;
    let client = &spot.client;
    let type_doc = format!(
        "Typed client of one [`{}`] {noun}, addressed by its global ID: the owner is found \
         through the route cache or the Location Store, wherever it runs. Cheap to clone.",
        quote!(#self_ty)
    );
    let new_doc = format!("A client of the {noun} with global ID `id`, calling through `runtime`.");
    let id_doc = format!("The {noun} ID this client addresses.");
    let methods = spot.handlers.iter().map(|h| method(spot, h));
    quote! {
        #[doc = #type_doc]
        #[derive(::core::clone::Clone)]
        pub struct #client {
            runtime: #krate::Runtime,
            id: ::std::sync::Arc<str>,
        }

        impl ::core::fmt::Debug for #client {
            fn fmt(&self, #f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                #f.debug_struct(::core::stringify!(#client))
                    .field("id", &&*self.id)
                    .finish_non_exhaustive()
            }
        }

        #[allow(private_interfaces)]
        impl #client {
            #[doc = #new_doc]
            pub fn new(
                #runtime: &#krate::Runtime,
                #id: impl ::core::convert::Into<::std::string::String>,
            ) -> Self {
                let #id: ::std::string::String = #id.into();
                Self {
                    runtime: ::core::clone::Clone::clone(#runtime),
                    id: ::std::sync::Arc::from(#id),
                }
            }

            #[doc = #id_doc]
            pub fn id(&self) -> &str {
                &self.id
            }

            #(#methods)*
        }
    }
}

fn method(spot: &ObjectBlock, h: &Handler) -> TokenStream {
    let krate = &spot.args.krate;
    let noun = spot.kind.noun;
    let manager = Ident::new(spot.kind.manager, Span::call_site());
    let message = &h.message;
    let name = &h.method;
    let name_with = format_ident!("{}_with", name);
    let docs = &h.docs;
    let message_text = quote!(#message).to_string();
    let (sent, options) = (local("message"), local("options"));
    let separator = (!docs.is_empty()).then(|| quote!(#[doc = ""]));
    let with_doc = format!("[`{name}`](Self::{name}) with a timeout and metadata.");
    match h.kind {
        HandlerKind::Request { .. } => {
            let doc =
                format!("Sends a `{message_text}` request to this {noun} and returns its reply.");
            quote_spanned! {message.span()=>
                #(#docs)*
                #separator
                #[doc = #doc]
                pub async fn #name(
                    &self,
                    #sent: &#message,
                ) -> #krate::Result<<#message as #krate::Request>::Reply> {
                    self.#name_with(#sent, ::core::default::Default::default()).await
                }

                #[doc = #with_doc]
                pub async fn #name_with(
                    &self,
                    #sent: &#message,
                    #options: #krate::CallOptions,
                ) -> #krate::Result<<#message as #krate::Request>::Reply> {
                    self.runtime.#manager().request_with(&self.id, #sent, #options).await
                }
            }
        }
        HandlerKind::Send => {
            let doc = format!(
                "Sends a one-way `{message_text}` to this {noun}; completes when it is queued for the owner."
            );
            quote_spanned! {message.span()=>
                #(#docs)*
                #separator
                #[doc = #doc]
                pub async fn #name(&self, #sent: &#message) -> #krate::Result<()> {
                    self.#name_with(#sent, ::core::default::Default::default()).await
                }

                #[doc = #with_doc]
                pub async fn #name_with(
                    &self,
                    #sent: &#message,
                    #options: #krate::CallOptions,
                ) -> #krate::Result<()> {
                    self.runtime.#manager().send_with(&self.id, #sent, #options).await
                }
            }
        }
    }
}
