//! The book's code is what compiles and runs. Chapters hold their code; a block marked
//! `<!-- snippet: NAME -->` is compiled where a test says `snippet!("chapter.md", "NAME")`
//! (or `statements!`, inside a function; each exactly once), and a block marked `<!-- shown from FILE:ANCHOR -->` shows an
//! example's own code, which must match it line for line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// (chapter file name, text) of every chapter.
fn chapters() -> Vec<(String, String)> {
    let mut found: Vec<_> = std::fs::read_dir(root().join("book/src"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("md"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    found.sort();
    found
}

/// One marked code block: its marker's value and its code.
struct Block {
    chapter: String,
    marker: String,
    code: String,
}

/// The code blocks of every chapter marked with `<!-- {kind} ... -->` (`snippet:`,
/// `shown from`).
fn blocks(kind: &str) -> Vec<Block> {
    let prefix = format!("<!-- {kind} ");
    let mut found = Vec::new();
    for (chapter, text) in chapters() {
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            let Some(marker) = line
                .trim()
                .strip_prefix(&prefix)
                .and_then(|m| m.strip_suffix(" -->"))
            else {
                continue;
            };
            let fence = lines.next().unwrap_or_default();
            assert!(
                fence.starts_with("```"),
                "{chapter}: {line} before no code block"
            );
            let code: Vec<&str> = lines
                .by_ref()
                .take_while(|l| !l.starts_with("```"))
                .collect();
            found.push(Block {
                chapter: chapter.clone(),
                marker: marker.to_string(),
                code: code.join("\n"),
            });
        }
    }
    found
}

/// Every `.rs` file under the tests crate, with its text.
fn test_sources() -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().and_then(|e| e.to_str()) == Some("rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((path, text));
            }
        }
    }
    let mut out = Vec::new();
    walk(Path::new(env!("CARGO_MANIFEST_DIR")), &mut out);
    out
}

/// Where each `snippet!("chapter", "name")` stands: (chapter, name) -> files.
fn snippet_uses() -> BTreeMap<(String, String), Vec<PathBuf>> {
    let mut uses: BTreeMap<(String, String), Vec<PathBuf>> = BTreeMap::new();
    for (path, text) in test_sources() {
        for call in [
            "zlink_book_snippets::snippet!(\"",
            "zlink_book_snippets::statements!(\"",
        ] {
            for (at, _) in text.match_indices(call) {
                let rest = &text[at + call.len()..];
                let chapter = rest.split('"').next().unwrap_or_default().to_string();
                let name = rest.split('"').nth(2).unwrap_or_default().to_string();
                uses.entry((chapter, name)).or_default().push(path.clone());
            }
        }
    }
    uses
}

#[test]
fn every_snippet_of_the_book_is_compiled_exactly_once() {
    let blocks = blocks("snippet:");
    let uses = snippet_uses();
    assert!(
        blocks.len() >= 40,
        "the book shows compiled code: {} blocks",
        blocks.len()
    );
    for block in &blocks {
        let key = (block.chapter.clone(), block.marker.clone());
        let at = uses.get(&key).map(Vec::len).unwrap_or(0);
        assert_eq!(
            at, 1,
            "{}: snippet {} is compiled {at} times",
            block.chapter, block.marker
        );
    }
    assert_eq!(
        uses.len(),
        blocks.len(),
        "every snippet! names a block of the book"
    );
    for (chapter, text) in chapters() {
        assert!(
            !text.contains("{{#include"),
            "{chapter}: an include shows nothing on a forge"
        );
    }
}

/// The lines of `source` between `ANCHOR: anchor` and `ANCHOR_END: anchor` (all of it
/// without an anchor), other anchors' lines left out, with their common indent removed.
fn region(source: &str, anchor: Option<&str>) -> String {
    let lines: Vec<&str> = source.lines().collect();
    let (start, end) = match anchor {
        None => (0, lines.len()),
        Some(anchor) => {
            let start = lines
                .iter()
                .position(|l| l.trim_end().ends_with(&format!("ANCHOR: {anchor}")))
                .unwrap_or_else(|| panic!("no ANCHOR: {anchor}"))
                + 1;
            let end = start
                + lines[start..]
                    .iter()
                    .position(|l| l.trim_end().ends_with(&format!("ANCHOR_END: {anchor}")))
                    .unwrap_or_else(|| panic!("no ANCHOR_END: {anchor}"));
            (start, end)
        }
    };
    let kept: Vec<&str> = lines[start..end]
        .iter()
        .copied()
        .filter(|l| !l.contains("ANCHOR: ") && !l.contains("ANCHOR_END: "))
        .collect();
    let indent = kept
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let dedented: Vec<&str> = kept.iter().map(|l| l.get(indent..).unwrap_or("")).collect();
    dedented.join("\n").trim_matches('\n').to_string()
}

#[test]
fn every_example_the_book_shows_is_the_examples_code_line_for_line() {
    let shown = blocks("shown from");
    assert!(shown.len() >= 10, "{} blocks", shown.len());
    for block in shown {
        let (file, anchor) = match block.marker.split_once(':') {
            Some((file, anchor)) => (file.to_string(), Some(anchor.to_string())),
            None => (block.marker.clone(), None),
        };
        let source = std::fs::read_to_string(root().join(&file))
            .unwrap_or_else(|e| panic!("{}: {file}: {e}", block.chapter));
        let expected = region(&source, anchor.as_deref());
        assert!(
            block.code.trim_matches('\n') == expected,
            "{}: the block shown from {} is not the code there; it is now:\n{expected}",
            block.chapter,
            block.marker
        );
    }
}

/// The names a file takes from the private test crate (`use zlink_tests::...`).
fn test_crate_names(source: &str) -> Vec<String> {
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
            names.push(name.rsplit("::").next().unwrap_or(name).to_string());
        }
    }
    names
}

/// What the book shows compiles as shown: no snippet uses a helper of the private test
/// crate (`zlink_tests`), which a reader does not have.
#[test]
fn no_book_snippet_uses_a_private_test_helper() {
    let uses = snippet_uses();
    for block in blocks("snippet:") {
        assert!(
            !block.code.contains("zlink_tests"),
            "{}: snippet {} names a private test crate",
            block.chapter,
            block.marker
        );
        let key = (block.chapter.clone(), block.marker.clone());
        for file in uses.get(&key).into_iter().flatten() {
            let source = std::fs::read_to_string(file).unwrap();
            assert!(
                !source.contains("use zlink_tests::*"),
                "{}: glob-imports zlink_tests around snippet {}",
                file.display(),
                block.marker
            );
            for name in test_crate_names(&source) {
                let used = block
                    .code
                    .split(|c: char| !c.is_alphanumeric() && c != '_')
                    .any(|word| word == name);
                assert!(
                    !used,
                    "{}: snippet {} uses `{name}` from the private test crate",
                    block.chapter, block.marker
                );
            }
        }
    }
}
