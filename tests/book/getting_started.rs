//! The "Getting started" chapter, followed to the letter: in a fresh workspace holding
//! zlink's crates (as a clone does), `cargo new my-app`, the chapter's blocks pasted
//! where it says, then `cargo run -p my-app` and `cargo test -p my-app`, offline.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The crates a clone holds that the new package builds on.
const CRATES: [&str; 3] = ["zlink", "zlink-macros", "zlink-testkit"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Each `<!-- paste into FILE... -->` block of the chapter: (FILE, code).
fn pasted() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(root().join("book/src/getting-started.md")).unwrap();
    let mut found = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(rest) = line.trim().strip_prefix("<!-- paste into ") else {
            continue;
        };
        let file = rest.split([',', ' ']).next().unwrap().to_string();
        assert!(lines.next().is_some_and(|l| l.starts_with("```")), "{line}");
        let code: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.starts_with("```"))
            .collect();
        found.push((file, code.join("\n") + "\n"));
    }
    found
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap();
        if name == "target" {
            continue;
        }
        if path.is_dir() {
            copy_dir(&path, &to.join(name));
        } else {
            std::fs::copy(&path, to.join(name)).unwrap();
        }
    }
}

fn cargo(dir: &Path, args: &[&str]) -> String {
    let output = Command::new(env!("CARGO"))
        .args(args)
        .current_dir(dir)
        // Its own target directory, kept between runs: a fresh one builds zlink's
        // dependencies once.
        .env("CARGO_TARGET_DIR", root().join("target/getting-started"))
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "cargo {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn the_getting_started_chapter_pasted_into_a_fresh_package_runs_and_passes_its_test() {
    let clone = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("getting-started-clone");
    let _ = std::fs::remove_dir_all(&clone);
    std::fs::create_dir_all(&clone).unwrap();
    for krate in CRATES {
        copy_dir(&root().join(krate), &clone.join(krate));
    }
    std::fs::copy(root().join("Cargo.lock"), clone.join("Cargo.lock")).unwrap();
    // The clone's workspace, holding only the crates the package needs.
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let members = manifest
        .lines()
        .find(|l| l.starts_with("members"))
        .expect("a members line");
    let manifest = manifest.replace(members, &format!("members = {CRATES:?}"));
    std::fs::write(clone.join("Cargo.toml"), manifest).unwrap();

    // "From the clone's root: cargo new my-app"
    cargo(&clone, &["new", "my-app", "--vcs", "none", "--quiet"]);
    let workspace = std::fs::read_to_string(clone.join("Cargo.toml")).unwrap();
    assert!(
        workspace.contains("\"my-app\""),
        "cargo new joined the workspace:\n{workspace}"
    );
    let files = pasted();
    let names: Vec<&str> = files.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        names,
        [
            "my-app/Cargo.toml",
            "my-app/src/lib.rs",
            "my-app/src/main.rs",
            "my-app/tests/tally.rs"
        ]
    );
    for (file, code) in &files {
        let path = clone.join(file);
        if file.ends_with("Cargo.toml") {
            // "replacing the empty [dependencies]"
            let generated = std::fs::read_to_string(&path).unwrap();
            let at = generated
                .find("[dependencies]")
                .expect("cargo new's [dependencies]");
            std::fs::write(&path, format!("{}{code}", &generated[..at])).unwrap();
        } else {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, code).unwrap();
        }
    }
    let printed = cargo(&clone, &["run", "-p", "my-app", "--offline", "--quiet"]);
    assert_eq!(
        printed.trim(),
        "visits = 5",
        "what the chapter says it prints"
    );
    let tested = cargo(&clone, &["test", "-p", "my-app", "--offline"]);
    assert!(
        tested.contains("test a_tally_adds_up_whichever_node_calls_it ... ok"),
        "{tested}"
    );
}
