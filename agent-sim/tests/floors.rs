//! The floors of agent-sim hold: every `.rs` file under `agent-sim/src` belongs to a floor by its
//! folder, and no code in it names a floor above its own, nor the other surface.
//!
//! | floor | folder | may import |
//! | --- | --- | --- |
//! | 1 go | `go.rs`, `go/` (and the `go-compat` crate) | nothing of the crate |
//! | 2 model | `model/` | go |
//! | 3 state | `state/` | go, model |
//! | 4 surfaces | `http/`, `xds/` | go, model, state; never each other |
//! | 5 assembly | `assembly/` | everything |
//!
//! `lib.rs` (the re-exports) and the binary (`src/bin/`, which only sees the public API) are the
//! top and are not checked. Checked are `crate::...` paths anywhere in code (imports and inline
//! paths, `crate::{a, b}` groups included) and `super::` chains that climb out of a floor.
//! Comments, string literals and test-only code (`#[cfg(test)]` items and the files of
//! `#[cfg(test)] mod x;`) are not: a floor's tests may assemble a whole sim. A `crate::` path
//! must also name a floor (`crate::state::control::Control`, not the root re-export
//! `crate::Control`), so every path says where it points.

mod floors {
    pub(crate) mod check;
}

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use floors::check::{Violation, check_file, floor_named, module_path};

/// Every `.rs` file under `dir`, as paths relative to `root`, sorted.
fn rust_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(root, &path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path.strip_prefix(root).expect("under root").to_owned());
        }
    }
}

/// The checked files: every `.rs` under `src` but the binary and the test-only modules.
fn checked_violations() -> (usize, Vec<Violation>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &src, &mut files);
    // Parents before children: test-only module paths are found in their parents.
    files.sort_by_key(|p| p.components().count());
    let mut test_only: BTreeSet<Vec<String>> = BTreeSet::new();
    let mut all = Vec::new();
    let mut checked = 0;
    for rel in files {
        let rel = rel.to_string_lossy().replace('\\', "/");
        if rel.starts_with("bin/") {
            continue;
        }
        let module = module_path(&rel);
        if (1..=module.len()).any(|n| test_only.contains(&module[..n])) {
            continue;
        }
        let source = std::fs::read_to_string(src.join(&rel)).expect("readable source");
        let (found, children) = check_file(&rel, &source);
        let parent: Vec<String> = if rel == "lib.rs" {
            Vec::new()
        } else {
            module.clone()
        };
        for child in children {
            let mut p = parent.clone();
            p.push(child);
            test_only.insert(p);
        }
        checked += 1;
        all.extend(found);
    }
    (checked, all)
}

#[test]
fn floors_hold() {
    let (checked, found) = checked_violations();
    assert!(
        checked > 100,
        "only {checked} files checked: is the layout still src/<floor>/?"
    );
    let report: Vec<String> = found.iter().map(ToString::to_string).collect();
    assert!(
        report.is_empty(),
        "{} import(s) break agent-sim's floors:\n{}",
        report.len(),
        report.join("\n")
    );
}

#[test]
fn every_file_sits_in_a_floor() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &src, &mut files);
    let stray: Vec<String> = files
        .iter()
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .filter(|rel| rel != "lib.rs" && !rel.starts_with("bin/"))
        .filter(|rel| floor_named(&module_path(rel)[0]).is_none())
        .collect();
    assert!(stray.is_empty(), "files outside every floor: {stray:?}");
}

#[test]
fn go_compat_depends_on_nothing_of_the_sim() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("go-compat/Cargo.toml");
    let text = std::fs::read_to_string(&manifest).expect("go-compat manifest");
    assert!(
        !text
            .lines()
            .any(|l| l.trim_start().starts_with("agent-sim")),
        "go-compat must not depend on agent-sim"
    );
}

// === the checker fails where it should ===

fn why(rel: &str, source: &str) -> Vec<String> {
    check_file(rel, source)
        .0
        .into_iter()
        .map(|v| v.to_string())
        .collect()
}

#[test]
fn checker_catches_an_upward_import() {
    let found = why(
        "state/store.rs",
        "//! doc\nuse std::sync::Arc;\n\nuse crate::http::meta::Body;\n",
    );
    assert_eq!(
        found,
        [
            "agent-sim/src/state/store.rs:4: `use crate::http::meta::Body`: the state floor (level 3) imports the http floor above it (level 4)"
        ]
    );
}

#[test]
fn checker_catches_the_surfaces_importing_each_other() {
    assert_eq!(
        why(
            "xds/resources/snapshot.rs",
            "fn f() { crate::http::agent::merged(st, svc) }"
        )
        .len(),
        1
    );
    assert_eq!(
        why("http/agent.rs", "use crate::xds::types::CLUSTER;").len(),
        1
    );
}

#[test]
fn checker_reads_groups_inline_paths_and_super_chains() {
    let found = why(
        "model/intention.rs",
        "use crate::{go::gojson, state::control::Control};\nfn f() -> crate::assembly::sim::AgentSim { todo!() }\n",
    );
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].contains(":1:") && found[0].contains("state floor"),
        "{found:?}"
    );
    assert!(
        found[1].contains(":2:") && found[1].contains("assembly floor"),
        "{found:?}"
    );
    // `super::super` from model/ca/keys.rs climbs to the root, then into state.
    assert_eq!(
        why("model/ca/keys.rs", "use super::super::super::state::store;").len(),
        1
    );
    // Within a floor, super is fine.
    assert!(why("model/ca/keys.rs", "use super::super::acl::Authorizer;").is_empty());
    // A root re-export is not a floor.
    assert_eq!(why("http/app.rs", "use crate::Control;").len(), 1);
}

#[test]
fn checker_ignores_comments_strings_and_test_code() {
    let source = r#"//! See crate::assembly for the builder.
/// Like `crate::http::meta::Body`.
const S: &str = "crate::http::x";
const R: &str = r"crate::xds::y";
fn ok() -> char { '"' }
use crate::go::duration::GoDuration;
#[cfg(test)]
mod tests {
    use crate::assembly::sim::AgentSim;
}
#[cfg(test)]
mod more_tests;
"#;
    let (found, children) = check_file("model/chain.rs", source);
    assert!(found.is_empty(), "{found:?}");
    assert_eq!(children.into_iter().collect::<Vec<_>>(), ["more_tests"]);
}
