//! The book's "What the tests guarantee" table names exactly the conformance tests, each
//! under the seed section and item number its test says it checks.

use std::collections::BTreeSet;
use std::path::Path;

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

/// (seed, item, test) of every `/// Seed NNN §S, …, item N.` test in a conformance file.
fn conformance_tests(file: &str, seed: &str) -> BTreeSet<(String, u32, String)> {
    let text = read(file);
    let lines: Vec<&str> = text.lines().collect();
    let mut found = BTreeSet::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(rest) = line.strip_prefix("/// Seed ") else {
            continue;
        };
        let item: u32 = rest
            .rsplit_once("item ")
            .and_then(|(_, n)| n.trim_end_matches('.').parse().ok())
            .unwrap_or_else(|| panic!("no item number in {line:?}"));
        let name = lines[i..]
            .iter()
            .find_map(|l| l.strip_prefix("async fn "))
            .and_then(|l| l.split('(').next())
            .expect("the test under its doc line");
        found.insert((seed.to_string(), item, name.to_string()));
    }
    found
}

/// (seed, item, test) of every row of the book's tables.
fn book_rows() -> BTreeSet<(String, u32, String)> {
    let text = read("../book/src/guarantees.md");
    let mut seed = String::new();
    let mut rows = BTreeSet::new();
    for line in text.lines() {
        if line.starts_with("## ") {
            seed = if line.contains("seed 000") {
                "000"
            } else {
                "002"
            }
            .into();
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() == 5 {
            if let Ok(item) = cells[1].parse::<u32>() {
                rows.insert((seed.clone(), item, cells[3].trim_matches('`').to_string()));
            }
        }
    }
    rows
}

#[test]
fn the_guarantees_table_lists_every_verification_item_with_the_test_that_checks_it() {
    let mut tests = conformance_tests("conformance/seed_000_s5.rs", "000");
    tests.extend(conformance_tests("conformance/seed_002_s10.rs", "002"));
    let items = |seed: &str| tests.iter().filter(|(s, ..)| s == seed).count();
    assert_eq!((items("000"), items("002")), (17, 16), "one test per item");
    assert_eq!(book_rows(), tests);
}
