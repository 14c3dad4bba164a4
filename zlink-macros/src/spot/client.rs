//! The generated typed client: addressed by the Spot's global ID only, one method per
//! handler (plus a `_with` form taking `CallOptions`).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::Ident;

use super::SpotBlock;
use crate::handler::{Handler, HandlerKind};

fn local(name: &str) -> Ident {
    Ident::new(&format!("__zlink_{name}"), Span::mixed_site())
}

pub(crate) fn generate(spot: &SpotBlock) -> TokenStream {
    let krate = &spot.args.krate;
    let (runtime, id, f) = (local("runtime"), local("id"), local("f"));
    let self_ty = spot.self_ty;
    let client = &spot.client;
    let type_doc = format!(
        "Typed client of one [`{}`] Spot, addressed by its global ID: the owner is found \
         through the route cache or the Location Store, wherever it runs. Cheap to clone.",
        quote!(#self_ty)
    );
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
            /// A client of the Spot with global ID `id`, calling through `runtime`.
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

            /// The Spot ID this client addresses.
            pub fn id(&self) -> &str {
                &self.id
            }

            #(#methods)*
        }
    }
}

fn method(spot: &SpotBlock, h: &Handler) -> TokenStream {
    let krate = &spot.args.krate;
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
                format!("Sends a `{message_text}` request to this Spot and returns its reply.");
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
                    self.runtime.spots().request_with(&self.id, #sent, #options).await
                }
            }
        }
        HandlerKind::Send => {
            let doc = format!(
                "Sends a one-way `{message_text}` to this Spot; completes when it is queued for the owner."
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
                    self.runtime.spots().send_with(&self.id, #sent, #options).await
                }
            }
        }
    }
}
