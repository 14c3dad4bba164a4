//! Every `{{#include file:anchor}}` in the book points at an existing file and anchor, so
//! the book only ever shows code that compiles (and, for the test-backed chapters, runs).

use std::path::{Path, PathBuf};

fn book_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../book/src")
}

#[test]
fn every_book_include_resolves_to_a_file_and_anchor() {
    let mut checked = 0;
    for entry in std::fs::read_dir(book_src()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("md") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, _) in text.match_indices("{{#include ") {
            let rest = &text[i + "{{#include ".len()..];
            let spec = &rest[..rest.find("}}").unwrap()];
            let (file, anchor) = match spec.split_once(':') {
                Some((f, a)) => (f, Some(a)),
                None => (spec, None),
            };
            let target = path.parent().unwrap().join(file);
            let source = std::fs::read_to_string(&target)
                .unwrap_or_else(|e| panic!("{}: include {file}: {e}", path.display()));
            if let Some(anchor) = anchor {
                assert!(
                    source.contains(&format!("ANCHOR: {anchor}"))
                        && source.contains(&format!("ANCHOR_END: {anchor}")),
                    "{}: anchor {anchor} missing in {file}",
                    path.display()
                );
            }
            checked += 1;
        }
    }
    assert!(
        checked >= 5,
        "expected the book to include compiled code, found {checked} includes"
    );
}
