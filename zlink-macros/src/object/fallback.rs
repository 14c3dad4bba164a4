//! What `#[spot]` and `#[actor]` emit beside their error: the items the rest of the
//! program names (the handlers trait, `STABLE_TYPE`, `RELOCATION`, the registration
//! function, the client's type with `new` and `id`), so the compiler reports the macro's
//! error alone and not, a line later, that `Room: SpotHandlers` does not hold. None of it
//! runs: the program does not compile while the error stands.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::{Ident, ItemImpl, Path};

use super::ObjectKind;

/// The stand-in items for `block`, named `self_name`, as far as the attribute could be
/// read (`krate` and `client` when it could).
pub(super) fn generate(
    kind: &ObjectKind,
    block: &ItemImpl,
    self_name: &Ident,
    krate: Option<Path>,
    client: Option<Ident>,
) -> TokenStream {
    let krate = krate.unwrap_or_else(crate::crate_path::default_path);
    let client = client.unwrap_or_else(|| format_ident!("{}Client", self_name));
    let name = |text: &str| Ident::new(text, Span::call_site());
    let (handlers_trait, context, type_struct, register) = (
        name(kind.handlers_trait),
        name(kind.context),
        name(kind.type_struct),
        name(kind.register),
    );
    let target_of = Ident::new(&kind.noun.to_lowercase(), Span::call_site());
    let self_ty = &block.self_ty;
    let stable_type = self_name.to_string();
    quote! {
        #[automatically_derived]
        #[#krate::async_trait]
        impl #krate::object::#handlers_trait for #self_ty {
            fn packets() -> ::std::vec::Vec<(::std::string::String, #krate::PacketKind)> {
                ::std::vec::Vec::new()
            }

            async fn handle(
                &mut self,
                __zlink_ctx: &#krate::object::#context,
                __zlink_handler: usize,
                _: #krate::Payload,
            ) -> #krate::Result<#krate::Payload> {
                ::core::result::Result::Err(
                    #krate::__private::no_object_handler(__zlink_ctx, __zlink_handler),
                )
            }
        }

        #[automatically_derived]
        #[allow(dead_code)]
        impl #self_ty {
            pub const STABLE_TYPE: &'static str = #stable_type;
            pub const RELOCATION: #krate::object::Relocation = #krate::object::Relocation::Disable;

            pub fn #register(
                __zlink_factory: impl ::core::ops::Fn(&#krate::object::#context) -> Self
                    + ::core::marker::Send
                    + ::core::marker::Sync
                    + 'static,
            ) -> #krate::Result<#krate::object::#type_struct> {
                // Asks nothing of Self (not even the lifecycle trait): an error here would
                // be a second one.
                let _ = __zlink_factory;
                ::core::result::Result::Err(#krate::Error::new(
                    #krate::ErrorKind::InternalFailure,
                    "this type's attribute did not compile",
                ))
            }
        }

        #[derive(::core::clone::Clone)]
        #[allow(dead_code)]
        pub struct #client {
            handle: #krate::Handle,
            target: #krate::__private::ClientTarget,
        }

        #[allow(dead_code, private_interfaces)]
        impl #client {
            pub fn new(
                __zlink_handle: impl ::core::convert::Into<#krate::Handle>,
                __zlink_id: impl ::core::convert::Into<::std::string::String>,
            ) -> Self {
                Self {
                    handle: __zlink_handle.into(),
                    target: #krate::__private::ClientTarget::#target_of(__zlink_id.into()),
                }
            }

            pub fn instance(
                __zlink_handle: impl ::core::convert::Into<#krate::Handle>,
                __zlink_id: impl ::core::convert::Into<::std::string::String>,
            ) -> Self {
                Self::new(__zlink_handle, __zlink_id)
            }

            pub fn id(&self) -> &str {
                self.target.id()
            }
        }
    }
}
