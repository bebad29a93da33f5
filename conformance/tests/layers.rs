//! The module layers of `conformance`, held by reading its source: the plan sits below the
//! runner, the runner below the CLI.
//!
//! - only the runner itself (`src/runner.rs`, `src/runner/`), the command line (`src/cli.rs`,
//!   `src/cli/`) and the crate root (`src/lib.rs`, which declares the module and re-exports the
//!   public API) may refer to `crate::runner`, directly or through a name `lib.rs` re-exports
//!   from it;
//! - the plan (`src/plan.rs`, `src/plan/`) is pure: it refers to none of the modules that
//!   execute a run (`runner`, `world`, `exec`, `proxy`, `probe`, `netns`, `container`) nor to
//!   the `cli` above it.
//!
//! A reference is a path in code (comments, strings and character literals are ignored) that
//! resolves to one of those modules: `crate::runner::..`, `use crate::{runner, ..}`,
//! `super::super::runner::..` from deep enough, a bare `runner::..`, or `crate::RunConfig` when
//! `lib.rs` has `pub use runner::{RunConfig, ..}`. (`super` is resolved by the file's place in
//! the tree; an inline `mod` is not followed, which can only over-report.) `src/main.rs` is the
//! binary's own crate and is not checked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Modules only the runner, the CLI and the crate root may refer to.
const RUNNER: &str = "runner";
/// Where the runner may be referred to from (top-level modules).
const MAY_USE_RUNNER: &[&str] = &["runner", "cli"];
/// The plan's top-level module.
const PLAN: &str = "plan";
/// What the plan must not refer to.
const NOT_IN_PLAN: &[&str] = &[
    "runner",
    "world",
    "exec",
    "proxy",
    "probe",
    "netns",
    "container",
    "cli",
];

/// One reference from a file to a top-level module of the crate.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Reference {
    line: usize,
    /// The top-level module the path resolves to (after `lib.rs` re-exports).
    module: String,
    /// The path as written (whitespace dropped).
    text: String,
}

/// A source file: its path under `src/` (with `/`) and its text.
struct File {
    rel: String,
    text: String,
}

#[test]
fn conformance_keeps_its_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    collect(&src, &mut paths);
    paths.sort();
    let files: Vec<File> = paths
        .iter()
        .map(|p| File {
            rel: p
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/"),
            text: std::fs::read_to_string(p).unwrap(),
        })
        .collect();
    assert!(
        files.iter().any(|f| f.rel == "plan.rs") && files.iter().any(|f| f.rel == "runner.rs"),
        "src/plan.rs and src/runner.rs must exist"
    );
    let found = violations(&files);
    assert!(
        found.is_empty(),
        "layer violations:\n  {}",
        found.join("\n  ")
    );
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every layer violation of `files`, as `src/FILE:LINE: ...` lines.
fn violations(files: &[File]) -> Vec<String> {
    let reexports = files
        .iter()
        .find(|f| f.rel == "lib.rs")
        .map(|f| reexports(&f.text))
        .unwrap_or_default();
    let mut out = Vec::new();
    for f in files {
        if f.rel == "main.rs" || f.rel == "lib.rs" {
            continue;
        }
        let module = module_path(&f.rel);
        let top = module.first().map(String::as_str).unwrap_or_default();
        for r in references(&module, &f.text, &reexports) {
            if r.module == RUNNER && !MAY_USE_RUNNER.contains(&top) {
                out.push(format!(
                    "src/{}:{}: `{}` refers to the runner (only src/runner*, src/cli* and \
                     src/lib.rs may)",
                    f.rel, r.line, r.text
                ));
            }
            if top == PLAN && NOT_IN_PLAN.contains(&r.module.as_str()) {
                out.push(format!(
                    "src/{}:{}: `{}` makes the plan depend on `{}` (the plan is pure)",
                    f.rel, r.line, r.text, r.module
                ));
            }
        }
    }
    out
}

/// `world/apps.rs` -> `[world, apps]`; `lib.rs` -> `[]`.
fn module_path(rel: &str) -> Vec<String> {
    let stem = rel.strip_suffix(".rs").unwrap_or(rel);
    if stem == "lib" || stem == "main" {
        return Vec::new();
    }
    stem.split('/').map(str::to_owned).collect()
}

/// Names `lib.rs` re-exports, with the top-level module each comes from
/// (`pub use runner::{RunConfig, ..}` -> `RunConfig` = `runner`).
fn reexports(lib: &str) -> BTreeMap<String, String> {
    let toks = tokens(lib);
    let mut out = BTreeMap::new();
    let mut i = 0;
    while i + 2 < toks.len() {
        if toks[i].text == "pub" && toks[i + 1].text == "use" {
            let module = toks[i + 2].text.clone();
            let mut j = i + 3;
            while j < toks.len() && toks[j].text != ";" {
                let t = &toks[j].text;
                let last = toks
                    .get(j + 1)
                    .is_some_and(|n| matches!(n.text.as_str(), "," | "}" | ";"));
                if is_ident(t) && last && t != "self" {
                    out.insert(t.clone(), module.clone());
                }
                j += 1;
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// Every path in `text` (the source of the module at `module`) that resolves to a top-level
/// module of the crate, mapped through `reexports`.
fn references(
    module: &[String],
    text: &str,
    reexports: &BTreeMap<String, String>,
) -> Vec<Reference> {
    let toks = tokens(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        let starts = is_ident(&t.text)
            && toks.get(i + 1).is_some_and(|n| n.text == "::")
            && (i == 0 || toks[i - 1].text != "::")
            && (i == 0 || !matches!(toks[i - 1].text.as_str(), "mod" | "crate" | "extern"));
        if !starts {
            i += 1;
            continue;
        }
        // How many levels up from `module` the path starts; `None`: a bare path.
        let (up, mut j) = match t.text.as_str() {
            "crate" => (Some(module.len()), i + 2),
            "self" => (Some(0), i + 2),
            "super" => {
                let mut n = 0;
                let mut j = i;
                while toks.get(j).is_some_and(|t| t.text == "super")
                    && toks.get(j + 1).is_some_and(|t| t.text == "::")
                {
                    n += 1;
                    j += 2;
                }
                (Some(n), j)
            }
            _ => (None, i),
        };
        let end = path_end(&toks, i);
        let text: String = toks[i..end].iter().map(|t| t.text.as_str()).collect();
        let at_root = match up {
            Some(n) => n >= module.len(),
            // A bare `runner::..`: the crate's module (at the root) or an alias of it.
            None => true,
        };
        if at_root {
            let firsts = if toks.get(j).is_some_and(|t| t.text == "{") {
                group_firsts(&toks, j)
            } else {
                vec![j]
            };
            for k in firsts {
                let Some(name) = toks.get(k).filter(|t| is_ident(&t.text)) else {
                    continue;
                };
                if name.text == "self" {
                    continue;
                }
                let target = if up.is_some() {
                    reexports
                        .get(&name.text)
                        .cloned()
                        .unwrap_or_else(|| name.text.clone())
                } else {
                    name.text.clone()
                };
                out.push(Reference {
                    line: name.line,
                    module: target,
                    text: text.clone(),
                });
            }
        }
        j = j.max(end);
        i = j.max(i + 1);
    }
    out
}

/// The index just past the path starting at `i` (segments, `::`, braced groups, `*`, `as`).
fn path_end(toks: &[Token], i: usize) -> usize {
    let mut j = i;
    let mut depth = 0usize;
    while let Some(t) = toks.get(j) {
        match t.text.as_str() {
            "{" => depth += 1,
            "}" if depth > 0 => depth -= 1,
            "}" => break,
            "::" | "*" => {}
            "," | "as" if depth > 0 => {}
            s if is_ident(s) => {
                // Two identifiers in a row end the path (outside a group, or after `as`).
                if depth == 0 && j > i && is_ident(&toks[j - 1].text) {
                    break;
                }
            }
            _ if depth > 0 => {}
            _ => break,
        }
        j += 1;
        if depth == 0 && t.text == "}" {
            break;
        }
    }
    j
}

/// The index of the first token of every item of the braced group opening at `open`.
fn group_firsts(toks: &[Token], open: usize) -> Vec<usize> {
    let mut out = vec![open + 1];
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate().skip(open) {
        match t.text.as_str() {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            "," if depth == 1 => out.push(k + 1),
            _ => {}
        }
    }
    out
}

fn is_ident(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_alphanumeric() || c == '_')
}

#[derive(Debug)]
struct Token {
    text: String,
    line: usize,
}

/// Identifiers, `::` and single punctuation of `src`, with their lines; comments, string,
/// byte-string and character literals dropped.
fn tokens(src: &str) -> Vec<Token> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let skip_to = |i: &mut usize, line: &mut usize, to: usize| {
        *line += c[*i..to.min(c.len())]
            .iter()
            .filter(|&&ch| ch == '\n')
            .count();
        *i = to;
    };
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && next == Some('/') {
            let end = (i..c.len()).find(|&k| c[k] == '\n').unwrap_or(c.len());
            skip_to(&mut i, &mut line, end);
        } else if ch == '/' && next == Some('*') {
            let mut depth = 0;
            let mut k = i;
            while k < c.len() {
                if c[k] == '/' && c.get(k + 1) == Some(&'*') {
                    depth += 1;
                    k += 2;
                } else if c[k] == '*' && c.get(k + 1) == Some(&'/') {
                    depth -= 1;
                    k += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    k += 1;
                }
            }
            skip_to(&mut i, &mut line, k);
        } else if let Some(end) = raw_string_end(&c, i) {
            skip_to(&mut i, &mut line, end);
        } else if ch == '"' || (ch == 'b' && next == Some('"')) {
            let mut k = if ch == 'b' { i + 2 } else { i + 1 };
            while k < c.len() && c[k] != '"' {
                k += if c[k] == '\\' { 2 } else { 1 };
            }
            skip_to(&mut i, &mut line, k + 1);
        } else if ch == '\'' {
            // A character literal ('x', '\n', '\u{..}'); otherwise a lifetime or label.
            if next == Some('\\') {
                let end = (i + 2..c.len()).find(|&k| c[k] == '\'').unwrap_or(c.len());
                skip_to(&mut i, &mut line, end + 1);
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(Token {
                text: c[start..i].iter().collect(),
                line,
            });
        } else if ch == ':' && next == Some(':') {
            out.push(Token {
                text: "::".into(),
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                text: ch.to_string(),
                line,
            });
            i += 1;
        }
    }
    out
}

/// The end of a raw (byte) string literal starting at `i` (`r"..."`, `r#"..."#`, `br".."`).
fn raw_string_end(c: &[char], i: usize) -> Option<usize> {
    if i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_') {
        return None;
    }
    let mut k = i;
    if c.get(k) == Some(&'b') {
        k += 1;
    }
    if c.get(k) != Some(&'r') {
        return None;
    }
    k += 1;
    let hashes = c[k..].iter().take_while(|&&ch| ch == '#').count();
    k += hashes;
    if c.get(k) != Some(&'"') {
        return None;
    }
    k += 1;
    while k < c.len() {
        if c[k] == '"'
            && c[k + 1..]
                .iter()
                .take(hashes)
                .filter(|&&ch| ch == '#')
                .count()
                == hashes
        {
            return Some(k + 1 + hashes);
        }
        k += 1;
    }
    Some(c.len())
}

// === the checker itself can fail ===

fn file(rel: &str, text: &str) -> File {
    File {
        rel: rel.into(),
        text: text.into(),
    }
}

const LIB: &str = "pub mod plan;\npub mod runner;\n\
                   pub use plan::{Planned, Tamper, catalogue};\n\
                   pub use runner::{RunConfig, run_all};\n";

#[test]
fn a_world_importing_the_runner_is_named_with_file_line_and_path() {
    let found = violations(&[
        file("lib.rs", LIB),
        file("world.rs", "//! The world.\n\nuse crate::runner::Tamper;\n"),
    ]);
    assert_eq!(
        found,
        [
            "src/world.rs:3: `crate::runner::Tamper` refers to the runner (only src/runner*, \
          src/cli* and src/lib.rs may)"
        ]
    );
}

#[test]
fn every_spelling_of_a_runner_import_is_caught() {
    for (rel, text) in [
        ("exec.rs", "use crate::{error::Error, runner};"),
        (
            "exec/wait.rs",
            "use crate::{error::{Error}, runner::{RunConfig, run_all}};",
        ),
        (
            "world/apps.rs",
            "fn f() { super::super::runner::run_all(); }",
        ),
        ("world.rs", "use super::runner::Tamper;"),
        ("proxy.rs", "fn f(c: &runner::RunConfig) {}"),
        // Through a name lib.rs re-exports from the runner.
        ("exec.rs", "use crate::RunConfig;"),
        ("exec.rs", "use crate::{Planned, run_all};"),
        ("plan/shard.rs", "use crate::runner::Planned;"),
    ] {
        let found = violations(&[file("lib.rs", LIB), file(rel, text)]);
        assert!(
            found
                .iter()
                .any(|v| v.starts_with(&format!("src/{rel}:1:"))
                    && v.contains("refers to the runner")),
            "{rel}: {text:?} not caught: {found:?}"
        );
    }
}

#[test]
fn the_plan_must_not_reach_into_execution() {
    for (rel, text, module) in [
        ("plan.rs", "use crate::exec::Exec;", "exec"),
        ("plan/catalogue.rs", "use crate::world::World;", "world"),
        (
            "plan/shard.rs",
            "use super::super::proxy::ProxyCommand;",
            "proxy",
        ),
        (
            "plan/order.rs",
            "use crate::{error::Error, runner::RunConfig};",
            "runner",
        ),
        // lib.rs re-exports ProxyCommand from proxy.
        ("plan/order.rs", "use crate::ProxyCommand;", "proxy"),
    ] {
        let lib = format!("{LIB}pub use proxy::{{ProxyCommand, ProxyProcess}};\n");
        let found = violations(&[file("lib.rs", &lib), file(rel, text)]);
        assert!(
            found.iter().any(|v| v.starts_with(&format!("src/{rel}:1:"))
                && v.contains(&format!("depend on `{module}`"))),
            "{rel}: {text:?} not caught: {found:?}"
        );
    }
}

#[test]
fn allowed_references_and_look_alikes_pass() {
    let found = violations(&[
        file("lib.rs", LIB),
        // The runner and the CLI may use the runner; the runner may use the plan.
        file(
            "runner.rs",
            "use crate::plan::{Planned, catalogue};\nuse self::repeat::fold;",
        ),
        file(
            "runner/repeat.rs",
            "use super::{RunConfig, blank};\nuse crate::runner::Signal;",
        ),
        file("cli/run.rs", "use crate::runner::{RunConfig, run_all};"),
        file("cli.rs", "use crate::RunConfig;"),
        // The plan may use itself and the error type; world may use the plan.
        file(
            "plan/shard.rs",
            "use super::Planned;\nuse crate::error::Error;",
        ),
        file("plan.rs", "use self::tamper::Tamper;\npub mod shard;"),
        file(
            "world.rs",
            "use crate::plan::Tamper;\nuse crate::Tamper as T;",
        ),
        // Comments, doc links, strings and other crates' `runner`s are not imports.
        file(
            "exec.rs",
            "//! Unlike [`crate::runner::run_all`] ...\n// crate::runner::x\n\
             /* use crate::runner::RunConfig; */\n\
             const S: &str = \"crate::runner::RunConfig\";\n\
             const R: &str = r#\"use crate::runner::X;\"#;\n\
             const C: char = '\"'; fn f<'a>(x: &'a str) {}\n\
             use testcontainers::runners::AsyncRunner;\n\
             use proptest::test_runner::Config;\n",
        ),
        // The crate root declares and re-exports; the binary is its own crate.
        file("main.rs", "use conformance::runner::run_all;"),
    ]);
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn lines_are_counted_past_comments_and_strings() {
    let text = "/* one\ntwo */\nconst S: &str = \"a\nb\";\n// c\nuse crate::runner::X;\n";
    let refs = references(&["exec".into()], text, &BTreeMap::new());
    assert_eq!(
        refs,
        [Reference {
            line: 6,
            module: "runner".into(),
            text: "crate::runner::X".into(),
        }]
    );
}
