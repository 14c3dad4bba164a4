//! Every `{{#include file:anchor}}` in the book points at an existing file and anchor, so
//! the book only ever shows code that compiles (and, for the test-backed chapters, runs).

use std::path::{Path, PathBuf};

fn book_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../book/src")
}

/// One `{{#include file[:anchor]}}` of a chapter.
struct Include {
    /// The chapter that includes.
    chapter: PathBuf,
    /// What follows `#include `, as written.
    spec: String,
    file: PathBuf,
    anchor: Option<String>,
}

/// Every include of every chapter.
fn includes() -> Vec<Include> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(book_src()).unwrap() {
        let chapter = entry.unwrap().path();
        if chapter.extension().and_then(|e| e.to_str()) != Some("md") {
            continue;
        }
        let text = std::fs::read_to_string(&chapter).unwrap();
        for (i, _) in text.match_indices("{{#include ") {
            let rest = &text[i + "{{#include ".len()..];
            let spec = rest[..rest.find("}}").unwrap()].to_string();
            let (file, anchor) = match spec.split_once(':') {
                Some((f, a)) => (f.to_string(), Some(a.to_string())),
                None => (spec.clone(), None),
            };
            found.push(Include {
                file: chapter.parent().unwrap().join(file),
                chapter: chapter.clone(),
                spec,
                anchor,
            });
        }
    }
    found
}

#[test]
fn every_book_include_resolves_to_a_file_and_anchor() {
    let all = includes();
    for include in &all {
        let source = std::fs::read_to_string(&include.file).unwrap_or_else(|e| {
            panic!(
                "{}: include {}: {e}",
                include.chapter.display(),
                include.spec
            )
        });
        if let Some(anchor) = &include.anchor {
            assert!(
                source.contains(&format!("ANCHOR: {anchor}"))
                    && source.contains(&format!("ANCHOR_END: {anchor}")),
                "{}: anchor {anchor} missing in {}",
                include.chapter.display(),
                include.spec
            );
        }
    }
    let checked = all.len();
    assert!(
        checked >= 5,
        "expected the book to include compiled code, found {checked} includes"
    );
}

/// The names a file takes from the private test crate (`use zlink_tests::...`); `None`
/// when it takes them all with a glob, which an included file may not.
fn test_crate_names(source: &str) -> Option<Vec<String>> {
    let mut names = Vec::new();
    for line in source.lines() {
        let Some(rest) = line.trim().strip_prefix("use zlink_tests::") else {
            continue;
        };
        let list = rest
            .trim_end_matches(';')
            .trim_start_matches('{')
            .trim_end_matches('}');
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if name.ends_with('*') {
                return None;
            }
            names.push(name.rsplit("::").next().unwrap_or(name).to_string());
        }
    }
    Some(names)
}

/// The text the book shows of `source`: the anchored region, or all of it.
fn shown<'a>(source: &'a str, anchor: Option<&str>) -> &'a str {
    let Some(anchor) = anchor else { return source };
    let start = source
        .find(&format!("ANCHOR: {anchor}"))
        .map_or(0, |at| at + anchor.len());
    let end = source[start..]
        .find(&format!("ANCHOR_END: {anchor}"))
        .map_or(source.len(), |at| start + at);
    &source[start..end]
}

/// What the book shows compiles as shown: no snippet uses a helper of the private test
/// crate (`zlink_tests`), which a reader does not have.
#[test]
fn no_book_snippet_uses_a_private_test_helper() {
    for include in includes() {
        let (chapter, spec) = (include.chapter.display(), &include.spec);
        let source = std::fs::read_to_string(&include.file).unwrap();
        let names = test_crate_names(&source)
            .unwrap_or_else(|| panic!("{spec}, included in {chapter}, glob-imports zlink_tests"));
        let region = shown(&source, include.anchor.as_deref());
        assert!(
            !region.contains("zlink_tests"),
            "{chapter}: the snippet {spec} names zlink_tests"
        );
        for name in &names {
            let used = region
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .any(|word| word == name);
            assert!(
                !used,
                "{chapter}: the snippet {spec} uses `{name}` from the private test crate"
            );
        }
    }
}
