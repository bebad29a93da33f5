//! Property-based fuzzing of the scenario loader (`scenarios::parse`, `scenarios::parse_bytes`):
//! raw garbage, invalid UTF-8, the real catalogue files mutated byte- and line-wise, and random
//! TOML documents built from the catalogue's own keys and values. Every input gets an answer,
//! never a panic, and every error names the file, a line inside it, and (for type and validation
//! errors) the field.
//!
//! Cases per property: `PROPTEST_CASES` if set, else [`CI_CASES`] (a short pass for CI); the long
//! run is `PROPTEST_CASES=20000 cargo test --release -p scenarios --test fuzz`.

use proptest::prelude::*;
use proptest::test_runner::Config;
use toml::{Table, Value};

/// The CI pass: well under a minute for the whole file in a debug build.
const CI_CASES: u32 = 256;

/// `PROPTEST_CASES` (the documented long run) or the CI default.
fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(CI_CASES);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

const PATH: &str = "fuzz/input.toml";

/// The answer to any text: a scenario, or an error naming the file and a line that exists.
fn check_answer(text: &str) -> Result<(), TestCaseError> {
    match scenarios::parse(PATH, text) {
        Ok(s) => {
            // A loaded scenario is valid on its own.
            prop_assert!(
                scenarios::validate(&s).is_ok(),
                "parse accepted an invalid scenario"
            );
        }
        Err(e) => check_error(&e, text)?,
    }
    Ok(())
}

fn check_error(e: &scenarios::ScenarioError, text: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(&e.path, PATH);
    let shown = e.to_string();
    prop_assert!(
        shown.starts_with(PATH),
        "error does not name the file: {shown}"
    );
    prop_assert!(!e.message.trim().is_empty(), "empty message: {shown}");
    let line = e.line;
    prop_assert!(line.is_some(), "error without a line: {shown}");
    let lines = text.split('\n').count();
    let line = line.unwrap_or_default();
    prop_assert!(
        (1..=lines).contains(&line),
        "line {line} outside 1..={lines}: {shown}"
    );
    Ok(())
}

/// Every catalogue file's text.
fn files() -> Vec<&'static str> {
    scenarios::catalogue_files()
        .into_iter()
        .map(|(_, t)| t)
        .collect()
}

/// Every value written in the catalogue (leaves and whole tables/arrays), to recombine.
fn real_values() -> Vec<Value> {
    fn walk(v: &Value, out: &mut Vec<Value>) {
        out.push(v.clone());
        match v {
            Value::Table(t) => t.values().for_each(|v| walk(v, out)),
            Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for text in files() {
        let t: Table = text.parse().expect("catalogue file is TOML");
        t.values().for_each(|v| walk(v, &mut out));
    }
    out
}

/// Every key written in the catalogue.
fn real_keys() -> Vec<String> {
    let mut keys: Vec<String> = real_values()
        .iter()
        .filter_map(Value::as_table)
        .flat_map(|t| t.keys().cloned())
        .collect();
    for text in files() {
        let t: Table = text.parse().expect("catalogue file is TOML");
        keys.extend(t.keys().cloned());
    }
    keys.sort();
    keys.dedup();
    keys
}

/// One edit of a TOML tree, chosen by the numbers of a proptest case.
#[derive(Debug, Clone)]
enum Edit {
    /// Remove a key.
    Remove,
    /// Replace a value with a real value from elsewhere (wrong type, wrong place, or fine).
    Replace(usize),
    /// Add a real key (maybe unknown here) with a real value.
    Add(usize, usize),
    /// Replace a value with a scalar of another kind.
    Scalar(Value),
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::Integer),
        any::<f64>().prop_map(Value::Float),
        any::<bool>().prop_map(Value::Boolean),
        "[ -~]{0,12}".prop_map(Value::String),
        Just(Value::Array(Vec::new())),
        Just(Value::Table(Table::new())),
    ]
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        Just(Edit::Remove),
        any::<usize>().prop_map(Edit::Replace),
        (any::<usize>(), any::<usize>()).prop_map(|(k, v)| Edit::Add(k, v)),
        scalar().prop_map(Edit::Scalar),
    ]
}

/// Applies `edit` at the node `pick` selects (a walk down the tree, `pick` choosing each turn).
fn apply(t: &mut Table, pick: usize, edit: &Edit, keys: &[String], values: &[Value]) {
    let names: Vec<String> = t.keys().cloned().collect();
    if names.is_empty() || matches!(edit, Edit::Add(..)) && pick.is_multiple_of(3) {
        if let Edit::Add(k, v) = edit {
            t.insert(
                keys[k % keys.len()].clone(),
                values[v % values.len()].clone(),
            );
        }
        return;
    }
    let name = &names[pick % names.len()];
    let next = pick / names.len().max(2);
    // Descend into a table (or a table in an array) on some turns.
    if next % 2 == 1 {
        match t.get_mut(name) {
            Some(Value::Table(inner)) => return apply(inner, next / 2, edit, keys, values),
            Some(Value::Array(items)) if !items.is_empty() => {
                let i = (next / 2) % items.len();
                if let Value::Table(inner) = &mut items[i] {
                    return apply(inner, next / 4, edit, keys, values);
                }
            }
            _ => {}
        }
    }
    match edit {
        Edit::Remove => {
            t.remove(name);
        }
        Edit::Replace(v) => {
            t.insert(name.clone(), values[v % values.len()].clone());
        }
        Edit::Add(k, v) => {
            t.insert(
                keys[k % keys.len()].clone(),
                values[v % values.len()].clone(),
            );
        }
        Edit::Scalar(s) => {
            t.insert(name.clone(), s.clone());
        }
    }
}

/// A byte-level mutation of a real file.
#[derive(Debug, Clone)]
enum Mutation {
    Truncate(usize),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    DropLine(usize),
    DuplicateLine(usize),
    SwapLines(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let noise = prop_oneof![
        prop::collection::vec(any::<u8>(), 1..8),
        prop::sample::select(vec![
            b"\"".to_vec(),
            b"[".to_vec(),
            b"]]".to_vec(),
            b"=".to_vec(),
            b"\n".to_vec(),
            b"{".to_vec(),
            b"'''".to_vec(),
            b"\\u{0}".to_vec(),
            b"#".to_vec(),
            b"\xff\xfe".to_vec(),
            b"\xe2\x82".to_vec(),
        ]),
    ];
    prop_oneof![
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), noise).prop_map(|(at, b)| Mutation::Insert(at, b)),
        (any::<usize>(), 1usize..40).prop_map(|(at, n)| Mutation::Delete(at, n)),
        any::<usize>().prop_map(Mutation::DropLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
    ]
}

fn mutate(text: &str, m: &Mutation) -> Vec<u8> {
    let mut b = text.as_bytes().to_vec();
    let mut lines: Vec<&str> = text.split('\n').collect();
    let n = lines.len();
    match m {
        Mutation::Truncate(at) => b.truncate(at % (b.len() + 1)),
        Mutation::Insert(at, bytes) => {
            let at = at % (b.len() + 1);
            b.splice(at..at, bytes.iter().copied());
        }
        Mutation::Delete(at, len) => {
            let at = at % (b.len() + 1);
            let end = (at + len).min(b.len());
            b.drain(at..end);
        }
        Mutation::DropLine(i) => {
            lines.remove(i % n);
            b = lines.join("\n").into_bytes();
        }
        Mutation::DuplicateLine(i) => {
            let l = lines[i % n];
            lines.insert(i % n, l);
            b = lines.join("\n").into_bytes();
        }
        Mutation::SwapLines(i, j) => {
            lines.swap(i % n, j % n);
            b = lines.join("\n").into_bytes();
        }
    }
    b
}

/// Bytes (maybe not UTF-8) through the byte loader: the same checks, plus invalid UTF-8 named
/// with its line.
fn check_bytes(bytes: &[u8]) -> Result<(), TestCaseError> {
    let answer = scenarios::parse_bytes(PATH, bytes);
    match std::str::from_utf8(bytes) {
        Ok(text) => {
            prop_assert_eq!(answer.is_ok(), scenarios::parse(PATH, text).is_ok());
            check_answer(text)
        }
        Err(utf8) => {
            let e = answer.expect_err("invalid UTF-8 accepted");
            let valid = &bytes[..utf8.valid_up_to()];
            let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
            prop_assert_eq!(e.line, Some(line), "{}", e);
            prop_assert!(e.message.contains("UTF-8"), "{}", e);
            prop_assert_eq!(&e.path, PATH);
            Ok(())
        }
    }
}

proptest! {
    #![proptest_config(config())]

    /// Any text at all.
    #[test]
    fn garbage_text_gets_an_answer(text in "\\PC{0,400}") {
        check_answer(&text)?;
    }

    /// Any bytes at all, UTF-8 or not.
    #[test]
    fn garbage_bytes_get_an_answer(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        check_bytes(&bytes)?;
    }

    /// TOML-looking lines made of the catalogue's keys and punctuation.
    #[test]
    fn toml_shaped_garbage_gets_an_answer(
        parts in prop::collection::vec(
            prop_oneof![
                prop::sample::select(real_keys()).prop_map(|k| format!("{k} = ")),
                prop::sample::select(vec![
                    "[setup]\n", "[[steps]]\n", "[[setup.intentions]]\n", "[generate]\n",
                    "\"", "\n", "{", "}", "[", "]", ",", "=", "1", "true", "\"x\"", "'''",
                    "kind = \"inbound\"", "do = \"expect\"", "within = \"1h\"", "-1", "1e999",
                ]).prop_map(str::to_owned),
            ],
            0..60,
        )
    ) {
        check_answer(&parts.concat())?;
    }

    /// Real catalogue files, mutated at the byte or line level.
    #[test]
    fn mutated_catalogue_files_get_an_answer(
        file in prop::sample::select(files()),
        ms in prop::collection::vec(mutation(), 1..4),
    ) {
        let mut text = file.to_owned();
        let mut bytes = text.clone().into_bytes();
        for m in &ms {
            bytes = mutate(&text, m);
            text = String::from_utf8_lossy(&bytes).into_owned();
        }
        check_bytes(&bytes)?;
        check_answer(&text)?;
    }

    /// Random documents from the catalogue's own keys and values: a real file's tree with keys
    /// removed, values moved around or of another type, keys added where they do not belong.
    #[test]
    fn recombined_documents_get_an_answer(
        file in prop::sample::select(files()),
        edits in prop::collection::vec((any::<usize>(), edit()), 1..6),
    ) {
        let keys = real_keys();
        let values = real_values();
        let mut t: Table = file.parse().expect("catalogue file is TOML");
        for (pick, e) in &edits {
            apply(&mut t, *pick, e, &keys, &values);
        }
        // Floats like NaN serialize fine; a tree toml cannot write is skipped, not a finding.
        if let Ok(text) = toml::to_string(&t) {
            check_answer(&text)?;
        }
    }
}

/// Regression: the error for invalid UTF-8 names the file and the line of the first bad byte.
#[test]
fn invalid_utf8_names_file_and_line() {
    let e = scenarios::parse_bytes("x/bad.toml", b"id = \"a\"\n\ndescription = \"\xff\"\n")
        .expect_err("invalid UTF-8");
    assert_eq!(e.path, "x/bad.toml");
    assert_eq!(e.line, Some(3));
    assert!(e.to_string().starts_with("x/bad.toml:3: "), "{e}");
}

/// Every real file still loads through the byte loader.
#[test]
fn catalogue_files_load_as_bytes() {
    for (path, text) in scenarios::catalogue_files() {
        scenarios::parse_bytes(path, text.as_bytes()).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
}
