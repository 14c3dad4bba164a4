//! The arguments of `#[session(...)]`: only `crate = "path"`.

use proc_macro2::TokenStream;
use syn::parse::Parser;
use syn::Path;

use crate::attr_keys::{self, set_once};
use crate::crate_path;

/// What `#[session(crate = "...")]` declares.
pub(crate) struct SessionArgs {
    /// The path generated code uses for the runtime crate.
    pub(crate) krate: Path,
}

impl SessionArgs {
    pub(crate) fn parse(tokens: TokenStream) -> syn::Result<Self> {
        let mut krate: Option<Path> = None;
        let parser = syn::meta::parser(|meta| {
            match attr_keys::key(&meta).as_str() {
            "crate" => set_once(&mut krate, &meta, crate_path::parse),
            _ => Err(meta.error(
                "unknown key in #[session(...)]; a session type takes only `crate = \"path\"` (its listener is declared with `StreamListener`)",
            )),
        }
        });
        parser.parse2(tokens)?;
        Ok(SessionArgs {
            krate: krate.unwrap_or_else(crate_path::default_path),
        })
    }
}
