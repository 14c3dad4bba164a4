//! The crate's top-level modules form layers: each one imports only from layers below it,
//! so no two of them import each other and nothing below `host` reaches its owner. This
//! test reads every `crate::` path in the sources and fails on one that points up.
//!
//! Test code is exempt (files named `tests.rs`, `*_tests.rs` or `proptests.rs`, and an
//! inline `#[cfg(test)] mod … {` with what follows it): a unit test may assemble a whole node to drive the
//! one component it tests.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Lowest first. The crate root (`lib.rs`) and the macros' support module stand above all.
const LAYERS: &[&str] = &[
    "sync",
    "error",
    "telemetry",
    "wire",
    "link",
    "call",
    "store",
    "address",
    "mesh",
    "handle",
    "handler",
    "channel",
    "object",
    "session",
    "host",
];
const ABOVE_ALL: &[&str] = &["lib", "__private", "layering_tests"];

/// Upward imports that still exist, each with the change that removes it. The test fails
/// when one is gone too, so the list only shrinks.
const NOT_YET_LAYERED: &[(&str, &str)] = &[];

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|m| *m == module)
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read the source folder")
        .map(|e| e.expect("a folder entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn is_test_file(path: &Path) -> bool {
    let name = path.file_stem().and_then(|n| n.to_str()).unwrap_or("");
    name == "tests" || name == "proptests" || name.ends_with("_tests")
}

/// The production code of one file: up to its first inline `#[cfg(test)] mod … {`,
/// comments removed.
fn production_code(text: &str) -> String {
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            let next = lines.peek().map_or("", |l| l.trim());
            if next.ends_with('{') {
                break;
            }
            continue;
        }
        let line = match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        };
        code.push_str(line);
        code.push('\n');
    }
    code
}

fn ident_at(code: &str) -> &str {
    let end = code
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(code.len());
    &code[..end]
}

/// Every top-level module a piece of code names through `crate::`, including each first
/// segment inside `crate::{…}` groups.
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let after = &rest[at + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            let mut depth = 1;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => item_start = true,
                    c if item_start && depth == 1 && !c.is_whitespace() => {
                        named.insert(ident_at(&group[i..]).to_string());
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            named.insert(ident_at(after).to_string());
        }
        rest = after;
    }
    named
}

/// The crate root's re-exports (`pub use module::{Name, …}`), by name: `crate::Runtime` is
/// as much an import of `host` as `crate::host::Runtime`.
fn root_reexports(lib: &str) -> Vec<(String, String)> {
    let mut names = Vec::new();
    let code = production_code(lib);
    let mut rest = code.as_str();
    while let Some(at) = rest.find("pub use ") {
        let after = &rest[at + "pub use ".len()..];
        let end = after.find(';').unwrap_or(after.len());
        let item = &after[..end];
        let module = ident_at(item.trim_start_matches("crate::"));
        if rank(module).is_some() {
            let tail = item.rsplit("::{").next().unwrap_or(item);
            for name in tail.split([',', '{', '}', ':', ' ', '\n']) {
                if name.starts_with(|c: char| c.is_ascii_uppercase()) {
                    names.push((name.to_string(), module.to_string()));
                }
            }
        }
        rest = &after[end..];
    }
    names
}

#[test]
fn no_top_level_module_imports_one_above_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut upward = Vec::new();
    let mut unplaced = BTreeSet::new();
    let mut still_there = BTreeSet::new();
    let lib = std::fs::read_to_string(root.join("lib.rs")).expect("read lib.rs");
    let reexports = root_reexports(&lib);
    assert!(
        reexports
            .iter()
            .any(|(name, module)| name == "Runtime" && module == "host"),
        "the crate root's re-exports were not read"
    );
    for path in &files {
        if is_test_file(path) {
            continue;
        }
        let relative = path.strip_prefix(&root).expect("under src");
        let first = relative.components().next().expect("a path");
        let module = first
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if ABOVE_ALL.contains(&module.as_str()) {
            continue;
        }
        let Some(own) = rank(&module) else {
            unplaced.insert(module);
            continue;
        };
        let text = std::fs::read_to_string(path).expect("read a source file");
        for named in named_modules(&production_code(&text)) {
            let named = reexports
                .iter()
                .find(|(name, _)| *name == named)
                .map_or(named, |(_, module)| module.clone());
            match rank(&named) {
                Some(theirs) if theirs > own => {
                    let file = relative.to_string_lossy().replace('\\', "/");
                    if NOT_YET_LAYERED.contains(&(file.as_str(), named.as_str())) {
                        still_there.insert((file, named));
                    } else {
                        upward.push(format!(
                            "{file} ({module}) imports crate::{named}, a layer above it"
                        ));
                    }
                }
                Some(_) => {}
                // A lowercase name not in LAYERS is a module nobody placed.
                None if named.starts_with(|c: char| c.is_ascii_lowercase()) => {
                    unplaced.insert(named);
                }
                None => {}
            }
        }
    }
    assert!(
        unplaced.is_empty(),
        "top-level modules missing from LAYERS: {unplaced:?}"
    );
    assert!(upward.is_empty(), "upward imports:\n{}", upward.join("\n"));
    for (file, module) in NOT_YET_LAYERED {
        assert!(
            still_there.contains(&(file.to_string(), module.to_string())),
            "{file} no longer imports {module}: remove it from NOT_YET_LAYERED"
        );
    }
}

/// Folders whose child modules must import one another without a cycle.
const ACYCLIC_FOLDERS: &[&str] = &["mesh", "session", "object", "telemetry"];

/// The names a folder's `mod.rs` re-exports, by the child they come from
/// (`pub use child::{A, B}` or `pub(crate) use child::A`).
fn folder_reexports(module_rs: &str) -> Vec<(String, String)> {
    let mut names = Vec::new();
    for statement in production_code(module_rs).split(';') {
        let statement = statement.trim();
        let Some(at) = statement.find("use ") else {
            continue;
        };
        if !statement[..at].trim_start().starts_with("pub") {
            continue;
        }
        let path = statement[at + 4..].trim();
        let child = ident_at(path);
        let tail = path.rsplit("::{").next().unwrap_or(path);
        for name in tail.split([',', '{', '}', ':', ' ', '\n']) {
            let name = name.trim();
            if !name.is_empty() && name != child && name != "self" && name != "as" {
                names.push((name.to_string(), child.to_string()));
            }
        }
    }
    names
}

/// The children of `folder` that `code` names: `crate::folder::x`, and, from a file
/// `depth` levels below the folder, `super::x` (or `super::super::x`) and the items of a
/// `super::{…}` group; a name the folder re-exports counts as the child it comes from.
fn named_children(
    code: &str,
    folder: &str,
    depth: usize,
    reexports: &[(String, String)],
) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    let mut add = |name: &str| {
        let child = reexports
            .iter()
            .find(|(item, _)| item == name)
            .map_or(name, |(_, child)| child.as_str());
        named.insert(child.to_string());
    };
    let prefixes = [format!("crate::{folder}::"), "super::".repeat(depth)];
    for prefix in prefixes.iter().filter(|p| !p.is_empty()) {
        let mut rest = code;
        while let Some(at) = rest.find(prefix.as_str()) {
            let before = rest[..at].chars().last();
            let after = &rest[at + prefix.len()..];
            rest = after;
            // `super::super::x` is not `super::x` for a file one level up.
            if before.is_some_and(|c| c == ':' || c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            if after.starts_with("super::") {
                rest = after.trim_start_matches("super::");
                continue;
            }
            match after.strip_prefix('{') {
                Some(group) => {
                    let group = &group[..group.find('}').unwrap_or(group.len())];
                    for item in group.split(',') {
                        let item = ident_at(item.trim());
                        if !item.is_empty() {
                            add(item);
                        }
                    }
                }
                None => add(ident_at(after)),
            }
        }
    }
    named
}

/// The strongly connected components of more than one child.
fn cycles(edges: &std::collections::BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    // Reachability by a search from each child: the folders are small.
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(at) = stack.pop() {
            for next in edges.get(&at).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reaches: std::collections::BTreeMap<_, _> =
        edges.keys().map(|c| (c.clone(), reach(c))).collect();
    let mut found: Vec<BTreeSet<String>> = Vec::new();
    for (child, reached) in &reaches {
        let component: BTreeSet<String> = reached
            .iter()
            .filter(|other| reaches.get(*other).is_some_and(|back| back.contains(child)))
            .cloned()
            .collect();
        if component.len() > 1 && !found.contains(&component) {
            found.push(component);
        }
    }
    found
}

#[test]
fn no_child_of_a_layered_folder_imports_in_a_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for folder in ACYCLIC_FOLDERS {
        let dir = root.join(folder);
        let module_rs = std::fs::read_to_string(dir.join("mod.rs")).expect("the folder's mod.rs");
        let reexports = folder_reexports(&module_rs);
        let mut files = Vec::new();
        sources(&dir, &mut files);
        let mut edges = std::collections::BTreeMap::<String, BTreeSet<String>>::new();
        let children: BTreeSet<String> = std::fs::read_dir(&dir)
            .expect("read the folder")
            .filter_map(|e| {
                let name = e.ok()?.file_name().to_string_lossy().to_string();
                let child = name.trim_end_matches(".rs").to_string();
                (child != "mod" && !child.ends_with("tests") && child != "proptests")
                    .then_some(child)
            })
            .collect();
        for path in &files {
            let relative = path.strip_prefix(&dir).expect("under the folder");
            let parts: Vec<_> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().to_string())
                .collect();
            if is_test_file(path)
                || parts.iter().any(|p| p == "tests")
                || parts.len() == 1 && parts[0] == "mod.rs"
            {
                continue;
            }
            let child = parts[0].trim_end_matches(".rs").to_string();
            let in_mod_rs = parts.last().is_some_and(|p| p == "mod.rs");
            let depth = parts.len() - usize::from(in_mod_rs);
            let text = std::fs::read_to_string(path).expect("read a source file");
            let named = named_children(&production_code(&text), folder, depth, &reexports);
            let entry = edges.entry(child.clone()).or_default();
            entry.extend(
                named
                    .into_iter()
                    .filter(|n| *n != child && children.contains(n)),
            );
        }
        let caught = cycles(&edges);
        assert!(
            caught.is_empty(),
            "{folder}/: children import one another in a cycle: {caught:?}\nedges: {edges:#?}"
        );
    }
}

#[test]
fn the_child_import_reader_sees_super_groups_crate_paths_and_reexports() {
    let reexports = folder_reexports(
        "mod a;\npub use a::{Alpha, Beta};\npub(crate) use b::Gamma;\nuse c::Hidden;",
    );
    assert!(reexports.contains(&("Beta".to_string(), "a".to_string())));
    assert!(reexports.contains(&("Gamma".to_string(), "b".to_string())));
    assert!(!reexports.iter().any(|(n, _)| n == "Hidden"));
    let code = "use super::{a, d};\nuse super::super::e::X;\nuse crate::obj::f::Y;\nfn g() { super::Gamma::new() }";
    let named: Vec<_> = named_children(code, "obj", 1, &reexports)
        .into_iter()
        .collect();
    assert_eq!(named, ["a", "b", "d", "f"]);
    let deeper: Vec<_> = named_children(code, "obj", 2, &reexports)
        .into_iter()
        .collect();
    assert_eq!(deeper, ["e", "f"]);
}

#[test]
fn the_import_reader_sees_paths_groups_and_nested_groups() {
    let code = "use crate::mesh::MeshNode;\nuse crate::{wire::{A, B}, store, call::X};\nfn f() { crate::host::go() }";
    let named: Vec<_> = named_modules(code).into_iter().collect();
    assert_eq!(named, ["call", "host", "mesh", "store", "wire"]);
    assert!(named_modules(&production_code("// see crate::host\nuse crate::wire::A;")).len() == 1);
}
