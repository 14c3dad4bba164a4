//! `#[derive(Message)]`: packet name, codec and (for requests) the reply type.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{DeriveInput, LitStr, Path, Type};

use crate::attr_keys::{self, set_once};
use crate::{crate_path, names};

/// What `#[message(...)]` attributes on the type declare.
struct MessageArgs {
    name: Option<LitStr>,
    codec: Option<Type>,
    reply: Option<Type>,
    krate: Option<Path>,
}

impl MessageArgs {
    fn parse(input: &DeriveInput) -> syn::Result<Self> {
        let mut args = MessageArgs {
            name: None,
            codec: None,
            reply: None,
            krate: None,
        };
        for attr in input.attrs.iter().filter(|a| a.path().is_ident("message")) {
            attr.parse_nested_meta(|meta| match attr_keys::key(&meta).as_str() {
                "name" => set_once(&mut args.name, &meta, |m| m.value()?.parse()),
                "codec" => set_once(&mut args.codec, &meta, |m| m.value()?.parse()),
                "reply" => set_once(&mut args.reply, &meta, |m| m.value()?.parse()),
                "crate" => set_once(&mut args.krate, &meta, crate_path::parse),
                _ => Err(meta.error(
                    "unknown key in #[message(...)]; expected `name = \"...\"`, `codec = Type`, `reply = Type` or `crate = \"path\"`",
                )),
            })?;
        }
        Ok(args)
    }
}

/// Expands `#[derive(Message)]`.
pub(crate) fn derive(input: DeriveInput) -> syn::Result<TokenStream> {
    let args = MessageArgs::parse(&input)?;
    let krate = args.krate.unwrap_or_else(crate_path::default_path);
    let ident = &input.ident;
    let packet_name = match &args.name {
        Some(lit) => names::check(lit, "packet name")?,
        None => ident.to_string(),
    };
    let codec = args
        .codec
        .unwrap_or_else(|| syn::parse_quote!(#krate::Cbor));
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let mut where_clause = where_clause
        .cloned()
        .unwrap_or_else(|| syn::parse_quote!(where));
    where_clause
        .predicates
        .push(syn::parse_quote_spanned!(codec.span()=> #codec: #krate::Codec<Self>));
    if !input.generics.params.is_empty() {
        // A generic message is a message for the parameters that make it one.
        where_clause
            .predicates
            .push(syn::parse_quote!(Self: ::core::marker::Send + ::core::marker::Sync + 'static));
    }

    let request_impl = args.reply.map(|reply| {
        quote_spanned! {reply.span()=>
            #[automatically_derived]
            impl #impl_generics #krate::Request for #ident #ty_generics #where_clause {
                type Reply = #reply;
            }
        }
    });
    let bytes = syn::Ident::new("__zlink_bytes", proc_macro2::Span::mixed_site());
    Ok(quote! {
        #[automatically_derived]
        impl #impl_generics #krate::Message for #ident #ty_generics #where_clause {
            const PACKET_NAME: &'static str = #packet_name;

            fn encode(&self) -> #krate::Result<#krate::Bytes> {
                <#codec as #krate::Codec<Self>>::encode(self)
            }

            fn decode(#bytes: &[u8]) -> #krate::Result<Self> {
                <#codec as #krate::Codec<Self>>::decode(#bytes)
            }

            const HANDS_OVER: bool = <#codec as #krate::Codec<Self>>::HANDS_OVER;

            const STREAM_CODEC: ::core::option::Option<u8> = <#codec as #krate::Codec<Self>>::STREAM_CODEC;

            fn encoded_len(&self) -> #krate::Result<usize> {
                <#codec as #krate::Codec<Self>>::encoded_len(self)
            }
        }
        #request_impl
    })
}
