//! The arguments of `#[channel(...)]`.

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::{Ident, LitStr, Path};

use crate::attr_keys::{self, set_once};
use crate::{crate_path, names};

/// What `#[channel(server, name = "...", client = Name, crate = "...")]` declares.
pub(crate) struct ChannelArgs {
    /// The default ChannelName, already validated.
    pub(crate) default_name: Option<String>,
    /// The generated client's type name, when the user renames it.
    pub(crate) client: Option<Ident>,
    /// The path generated code uses for the runtime crate.
    pub(crate) krate: Path,
}

const EXPECTED: &str =
    "expected `server`, `name = \"channel\"`, `client = ClientTypeName` or `crate = \"path\"`";

impl ChannelArgs {
    pub(crate) fn parse(tokens: TokenStream) -> syn::Result<Self> {
        let mut server = false;
        let mut name: Option<LitStr> = None;
        let mut client: Option<Ident> = None;
        let mut krate: Option<Path> = None;
        let parser = syn::meta::parser(|meta| match attr_keys::key(&meta).as_str() {
            "server" if server => Err(meta.error("`server` is given twice")),
            "server" => {
                server = true;
                Ok(())
            }
            "client" => set_once(&mut client, &meta, |m| m.value()?.parse()),
            "name" => set_once(&mut name, &meta, |m| {
                m.value()?.parse::<LitStr>().map_err(|e| {
                    syn::Error::new(
                        e.span(),
                        "the default channel name must be a string literal, e.g. name = \"pricing\"",
                    )
                })
            }),
            "crate" => set_once(&mut krate, &meta, crate_path::parse),
            _ => Err(meta.error(format!("unknown key in #[channel(...)]; {EXPECTED}"))),
        });
        parser.parse2(tokens)?;
        if !server {
            return Err(syn::Error::new(
                Span::call_site(),
                "#[channel(...)] needs the role: write #[channel(server)] on an impl block of handlers",
            ));
        }
        let default_name = name
            .map(|lit| names::check(&lit, "the default channel name"))
            .transpose()?;
        Ok(ChannelArgs {
            default_name,
            client,
            krate: krate.unwrap_or_else(crate_path::default_path),
        })
    }
}
