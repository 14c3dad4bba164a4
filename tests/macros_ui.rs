//! Compile-time contracts of the macros: each file under `ui/fail` must fail to compile with
//! exactly the reviewed diagnostics in its `.stderr`; each file under `ui/pass` must compile
//! and run. Regenerate the `.stderr` files with `TRYBUILD=overwrite` and review the diff.

#[test]
fn macro_misuse_is_a_compile_error_with_a_precise_span() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui/fail/*.rs");
}

#[test]
fn macro_forms_compile_and_run() {
    let cases = trybuild::TestCases::new();
    cases.pass("ui/pass/*.rs");
}
