//! Compile-time contracts of the macros: each file under `ui/fail` must fail to compile with
//! exactly the reviewed diagnostics in its `.stderr`. Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite` and review the diff.
//!
//! Only misuse lives here, so trybuild runs `cargo check` (no code generation for the
//! dependencies). The forms that must compile and run are ordinary tests in
//! `tests/channels/macro_forms`.

#[test]
fn macro_misuse_fails_with_a_precise_span() {
    trybuild::TestCases::new().compile_fail("ui/fail/*.rs");
}
