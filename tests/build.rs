//! The book's chapters are compiled into these tests (`zlink_book_snippets::snippet!`):
//! a chapter that changes recompiles them.

use std::hash::{DefaultHasher, Hash, Hasher};

fn main() {
    let book = concat!(env!("CARGO_MANIFEST_DIR"), "/../book/src");
    println!("cargo:rerun-if-changed={book}");
    let mut hasher = DefaultHasher::new();
    let mut chapters: Vec<_> = std::fs::read_dir(book)
        .map(|dir| dir.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    chapters.sort();
    for chapter in chapters {
        println!("cargo:rerun-if-changed={}", chapter.display());
        if let Ok(text) = std::fs::read_to_string(&chapter) {
            chapter.hash(&mut hasher);
            text.hash(&mut hasher);
        }
    }
    // A new value recompiles the crate, and with it every snippet! expansion.
    println!("cargo:rustc-env=ZLINK_BOOK_CHAPTERS={:x}", hasher.finish());
}
