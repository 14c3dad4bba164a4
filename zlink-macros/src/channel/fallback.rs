//! What `#[channel(server)]` emits beside its error: the handler group trait, the default
//! channel (when the attribute named one) and the client's type with `new`, so the
//! compiler reports the macro's error alone and not each `.serve(..)` or client of the
//! group after it. None of it runs: the program does not compile while the error stands.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Ident, ItemImpl, Path};

/// The stand-in items for `block`, named `self_name`, as far as the attribute could be
/// read.
pub(super) fn generate(
    block: &ItemImpl,
    self_name: &Ident,
    krate: Option<Path>,
    client: Option<Ident>,
    default_name: Option<String>,
) -> TokenStream {
    let krate = krate.unwrap_or_else(crate::crate_path::default_path);
    let client = client.unwrap_or_else(|| format_ident!("{}Client", self_name));
    let self_ty = &block.self_ty;
    let default_channel = default_name.map(|name| {
        quote! {
            #[automatically_derived]
            impl #krate::DefaultChannel for #self_ty {
                const CHANNEL: &'static str = #name;
            }

            #[allow(dead_code)]
            impl #client {
                pub fn on_default_channel(
                    __zlink_handle: impl ::core::convert::Into<#krate::Handle>,
                ) -> Self {
                    Self::new(__zlink_handle, #name)
                }
            }
        }
    });
    quote! {
        #[automatically_derived]
        impl #krate::HandlerGroup for #self_ty {
            fn packets(&self) -> ::std::vec::Vec<(::std::string::String, #krate::PacketKind)> {
                ::std::vec::Vec::new()
            }

            fn handle<'zlink>(
                &'zlink self,
                __zlink_ctx: #krate::HandlerContext,
                __zlink_packet: usize,
                _: #krate::Bytes,
            ) -> #krate::BoxFuture<'zlink, #krate::Result<#krate::Bytes>> {
                ::std::boxed::Box::pin(async move {
                    ::core::result::Result::Err(
                        #krate::__private::no_handler(&__zlink_ctx, __zlink_packet),
                    )
                })
            }
        }

        #[derive(::core::clone::Clone)]
        #[allow(dead_code)]
        pub struct #client {
            handle: #krate::Handle,
            channel: ::std::sync::Arc<str>,
        }

        #[allow(dead_code)]
        impl #client {
            pub fn new(
                __zlink_handle: impl ::core::convert::Into<#krate::Handle>,
                __zlink_channel: impl ::core::convert::Into<::std::string::String>,
            ) -> Self {
                let __zlink_channel: ::std::string::String = __zlink_channel.into();
                Self {
                    handle: __zlink_handle.into(),
                    channel: ::std::sync::Arc::from(__zlink_channel),
                }
            }
        }

        #default_channel
    }
}
