//! Shared parsing of `key = value` attribute arguments.

use syn::meta::ParseNestedMeta;

/// The key of one argument (`name` in `name = "x"`), or empty for a path that is not a
/// single identifier.
pub(crate) fn key(meta: &ParseNestedMeta) -> String {
    meta.path
        .get_ident()
        .map(ToString::to_string)
        .unwrap_or_default()
}

/// Stores the argument's value in `slot`; a key given twice is an error at the second one.
pub(crate) fn set_once<T>(
    slot: &mut Option<T>,
    meta: &ParseNestedMeta,
    value: impl FnOnce(&ParseNestedMeta) -> syn::Result<T>,
) -> syn::Result<()> {
    if slot.is_some() {
        return Err(meta.error(format!("`{}` is given twice", key(meta))));
    }
    *slot = Some(value(meta)?);
    Ok(())
}
