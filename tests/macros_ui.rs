//! Compile-time contracts of the macros: each file under `ui/pass` must compile and run; each
//! file under `ui/fail` must fail to compile with exactly the reviewed diagnostics in its
//! `.stderr`. Regenerate the `.stderr` files with `TRYBUILD=overwrite` and review the diff.
//!
//! One `TestCases` holds both sets so trybuild builds the workspace's dependencies once.

#[test]
fn macro_forms_compile_and_run_and_misuse_fails_with_a_precise_span() {
    // trybuild does not carry the workspace's profile over to its own build of the
    // dependencies; without this its target alone outgrows a small CI disk.
    std::env::set_var("CARGO_PROFILE_DEV_DEBUG", "line-tables-only");
    let cases = trybuild::TestCases::new();
    cases.pass("ui/pass/*.rs");
    cases.compile_fail("ui/fail/*.rs");
}
