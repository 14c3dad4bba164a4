//! Where generated code finds the runtime crate: `::zlink` unless `crate = "path"` says
//! otherwise (for applications that reach zlink through a re-export).

use syn::meta::ParseNestedMeta;
use syn::{LitStr, Path};

/// The default path, `::zlink`.
pub(crate) fn default_path() -> Path {
    syn::parse_quote!(::zlink)
}

/// Parses the value of a `crate = "path"` key.
pub(crate) fn parse(meta: &ParseNestedMeta) -> syn::Result<Path> {
    let lit: LitStr = meta.value()?.parse()?;
    lit.parse::<Path>().map_err(|_| {
        syn::Error::new(
            lit.span(),
            "`crate` must be a path to the zlink crate, e.g. \"::my_platform::zlink\"",
        )
    })
}
