//! The generated typed client: addressed by the object's global ID only, one method per
//! handler, each returned as a `Call` (awaited directly, or given a timeout and metadata
//! first).

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
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
    let (handle, id, f) = (local("handle"), local("id"), local("f"));
    let self_ty = spot.self_ty;
    let client = &spot.client;
    let type_doc = format!(
        "Typed client of one [`{}`] {noun}, addressed by its global ID: the owner is found \
         through the route cache or the Location Store, wherever it runs. Cheap to clone.",
        quote!(#self_ty)
    );
    let new_doc = format!(
        "A client of the {noun} with global ID `id`, calling through `handle` (a `&Runtime` or a `&Handle`, such as a handler context's)."
    );
    let id_doc = format!("The {noun} ID this client addresses.");
    let target_of = Ident::new(&noun.to_lowercase(), Span::call_site());
    // A subscription handler takes multicast events, not calls.
    let methods = spot
        .handlers
        .iter()
        .filter(|h| h.subscription.is_none())
        .map(|h| method(spot, h));
    let get_or_create = match spot.args.instance {
        Some(_) => instance_constructor(spot),
        None => get_or_create(spot),
    };
    quote! {
        #[doc = #type_doc]
        #[derive(::core::clone::Clone)]
        pub struct #client {
            handle: #krate::Handle,
            target: #krate::__private::ClientTarget,
        }

        impl ::core::fmt::Debug for #client {
            fn fmt(&self, #f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                #f.debug_struct(::core::stringify!(#client))
                    .field("id", &self.target.id())
                    .finish_non_exhaustive()
            }
        }

        #[allow(private_interfaces)]
        impl #client {
            #[doc = #new_doc]
            pub fn new(
                #handle: impl ::core::convert::Into<#krate::Handle>,
                #id: impl ::core::convert::Into<::std::string::String>,
            ) -> Self {
                Self {
                    handle: #handle.into(),
                    target: #krate::__private::ClientTarget::#target_of(#id.into()),
                }
            }

            #[doc = #id_doc]
            pub fn id(&self) -> &str {
                self.target.id()
            }

            #get_or_create

            #(#methods)*
        }
    }
}

/// An Instance Spot client: `instance(handle, id)` gives every call Instance intent.
fn instance_constructor(spot: &ObjectBlock) -> TokenStream {
    let krate = &spot.args.krate;
    let self_ty = spot.self_ty;
    let (handle, id) = (local("handle"), local("id"));
    quote! {
        /// A client of Instance Spot `id` whose every call carries Instance intent: the
        /// first call to an ID with no Spot activates one of this type (on a node serving
        /// it), and that call's message is its first handler call. Calls to a Spot that
        /// exists go to it, as with [`new`](Self::new).
        pub fn instance(
            #handle: impl ::core::convert::Into<#krate::Handle>,
            #id: impl ::core::convert::Into<::std::string::String>,
        ) -> Self {
            Self {
                handle: #handle.into(),
                target: #krate::__private::ClientTarget::instance_spot(#id.into(), <#self_ty>::STABLE_TYPE),
            }
        }
    }
}

/// `get_or_create`: the object exists afterwards (found, or created by this call) and the
/// client addresses it; one call for the common case.
fn get_or_create(spot: &ObjectBlock) -> TokenStream {
    let krate = &spot.args.krate;
    let self_ty = spot.self_ty;
    let (handle, id, args) = (local("handle"), local("id"), local("args"));
    if spot.kind.noun == "Actor" {
        return quote! {
            /// A client of Actor `id`, created first (in the Entry Spot of a node serving
            /// the type) when it does not exist yet; of racing calls exactly one creates it.
            pub async fn get_or_create(
                #handle: impl ::core::convert::Into<#krate::Handle>,
                #id: impl ::core::convert::Into<::std::string::String>,
            ) -> #krate::Result<Self> {
                let (#handle, #id): (#krate::Handle, ::std::string::String) = (#handle.into(), #id.into());
                #krate::__private::get_or_create_actor(&#handle, &#id, <#self_ty>::STABLE_TYPE).await?;
                ::core::result::Result::Ok(Self::new(#handle, #id))
            }
        };
    }
    let (param, request, doc) = match &spot.args.create {
        Some(create) => (
            quote!(#args: &#create,),
            quote!(#krate::Message::encode(#args)?),
            "A client of Spot `id`, created first with `args` (what its `#[on_create]` method takes) when it does not exist yet; of racing calls exactly one creates it. A declined creation is `Rejected`, with the reply.",
        ),
        None => (
            quote!(),
            quote!(#krate::Bytes::new()),
            "A client of Spot `id`, created first (with an empty creation request) when it does not exist yet; of racing calls exactly one creates it. A declined creation is `Rejected`, with the reply.",
        ),
    };
    quote! {
        #[doc = #doc]
        pub async fn get_or_create(
            #handle: impl ::core::convert::Into<#krate::Handle>,
            #id: impl ::core::convert::Into<::std::string::String>,
            #param
        ) -> #krate::Result<Self> {
            let (#handle, #id): (#krate::Handle, ::std::string::String) = (#handle.into(), #id.into());
            let __zlink_request = #request;
            #krate::__private::get_or_create_spot(&#handle, &#id, <#self_ty>::STABLE_TYPE, __zlink_request).await?;
            ::core::result::Result::Ok(Self::new(#handle, #id))
        }
    }
}

fn method(spot: &ObjectBlock, h: &Handler) -> TokenStream {
    let krate = &spot.args.krate;
    let noun = spot.kind.noun;
    let message = &h.message;
    let name = &h.method;
    let docs = &h.docs;
    let message_text = quote!(#message).to_string();
    let sent = local("message");
    let separator = (!docs.is_empty()).then(|| quote!(#[doc = ""]));
    match h.kind {
        HandlerKind::Request => {
            let doc = format!(
                "A `{message_text}` request to this {noun}: await it for the reply, or set its timeout and metadata first."
            );
            quote_spanned! {message.span()=>
                #(#docs)*
                #separator
                #[doc = #doc]
                // The message type may be less visible than the client: it is the
                // application's to choose.
                #[allow(private_bounds)]
                pub fn #name<'__zlink>(
                    &'__zlink self,
                    #sent: impl #krate::Outgoing<#message>,
                ) -> #krate::Call<'__zlink, #krate::Reply<<#message as #krate::Request>::Reply>> {
                    self.target.request::<#message>(&self.handle, #sent)
                }
            }
        }
        HandlerKind::Send => {
            let doc = format!(
                "A one-way `{message_text}` to this {noun}; complete when it is queued for the owner."
            );
            quote_spanned! {message.span()=>
                #(#docs)*
                #separator
                #[doc = #doc]
                // The message type may be less visible than the client: it is the
                // application's to choose.
                #[allow(private_bounds)]
                pub fn #name<'__zlink>(
                    &'__zlink self,
                    #sent: impl #krate::Outgoing<#message>,
                ) -> #krate::Call<'__zlink, #krate::OneWay> {
                    self.target.send::<#message>(&self.handle, #sent)
                }
            }
        }
    }
}
