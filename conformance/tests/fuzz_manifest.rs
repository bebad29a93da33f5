//! Property-based fuzzing of the manifest parser (`Manifest::parse`, `Manifest::parse_bytes`):
//! raw garbage, invalid UTF-8, the example manifests mutated byte- and line-wise, and documents
//! recombined from the manifest's own keys and real values. Never a panic; every error is a
//! `manifest_invalid` that names the file and either the line (TOML errors) or the key
//! (validation errors).
//!
//! Cases per property: `PROPTEST_CASES` if set, else [`CI_CASES`]; the long run is
//! `PROPTEST_CASES=20000 cargo test --release -p conformance --test fuzz_manifest`.

use std::path::Path;

use conformance::{Error, Manifest};
use proptest::prelude::*;
use proptest::test_runner::Config;
use toml::{Table, Value};

/// The CI pass: a few seconds in a debug build.
const CI_CASES: u32 = 256;

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

const PATH: &str = "fuzz/proxy.toml";

/// The real manifests: both examples and the reference proxy's, written out.
const EXAMPLES: &[&str] = &[
    include_str!("../../examples/envoy/proxy.toml"),
    include_str!("../../examples/envoy/proxy-image.toml"),
    r#"
name = "my-proxy"
version = "1.4.0"
command = "my-proxy -proxy-id {proxy_id}"
features = ["l4", "l7-http", "upstreams", "transparent"]
token_file_args = "-token-file {token_file}"

[bounds]
reauthorize_ms = 1000
max_lifetime_ms = 600000

[proxy_config]
reauthorize_interval_ms = 1000
protocol = "tcp"

[transparent]
uid = 5995
redirect_command = "{exe} redirect-traffic -proxy-id {proxy_id} -proxy-uid {proxy_uid}"
"#,
];

/// The manifest's keys, by table (`""` = top level).
const KEYS: &[(&str, &str)] = &[
    ("", "name"),
    ("", "version"),
    ("", "command"),
    ("", "features"),
    ("", "token_file_args"),
    ("", "image"),
    ("", "bounds"),
    ("", "proxy_config"),
    ("", "transparent"),
    ("", "xds"),
    ("bounds", "reauthorize_ms"),
    ("bounds", "max_lifetime_ms"),
    ("transparent", "uid"),
    ("transparent", "redirect_command"),
    ("xds", "tls_mode"),
    ("xds", "admin_bind"),
];

/// Keys a validation error message may start with (`key: what is wrong`).
const FIELDS: &[&str] = &[
    "name",
    "command",
    "image",
    "token_file_args",
    "transparent.redirect_command",
    "transparent.uid",
    "features",
];

/// Values worth trying: real ones and near misses.
fn values() -> Vec<Value> {
    let s = |x: &str| Value::String(x.to_owned());
    vec![
        s(""),
        s(" "),
        s("envoy"),
        s("{proxy_id}"),
        s("{bootstrap}"),
        s("{nope}"),
        s("{"),
        s("}"),
        s("'unclosed"),
        s("\"unclosed"),
        s("x {exe} -c {bootstrap}"),
        s("my-proxy -proxy-id {proxy_id}"),
        s("inline"),
        s("sds"),
        s("127.0.0.1:0"),
        s("not an address"),
        s("envoy:latest"),
        s("UPPER/case:tag"),
        s("l4"),
        s("xds"),
        Value::Integer(0),
        Value::Integer(-1),
        Value::Integer(i64::MAX),
        Value::Integer(5995),
        Value::Float(f64::NAN),
        Value::Boolean(true),
        Value::Array(vec![s("l4"), s("xds")]),
        Value::Array(vec![s("bogus")]),
        Value::Array(vec![Value::Integer(1)]),
        Value::Table(Table::new()),
    ]
}

fn check_answer(text: &str) -> Result<(), TestCaseError> {
    match Manifest::parse(Path::new(PATH), text) {
        Ok(m) => prop_assert!(m.validate(PATH).is_ok(), "accepted, then invalid"),
        Err(e) => check_error(&e, text)?,
    }
    Ok(())
}

fn check_error(e: &Error, text: &str) -> Result<(), TestCaseError> {
    let shown = e.to_string();
    prop_assert_eq!(e.kind(), "manifest_invalid", "{}", shown);
    let Error::Manifest { origin, message } = e else {
        return Err(TestCaseError::fail(format!(
            "not a manifest error: {shown}"
        )));
    };
    prop_assert!(
        shown.starts_with(PATH),
        "error does not name the file: {shown}"
    );
    prop_assert!(!message.trim().is_empty(), "empty message: {shown}");
    if let Some(line) = origin.strip_prefix(&format!("{PATH}:")) {
        let line: usize = line
            .parse()
            .map_err(|_| TestCaseError::fail(shown.clone()))?;
        let lines = text.split('\n').count();
        prop_assert!(
            (1..=lines).contains(&line),
            "line {line} of {lines}: {shown}"
        );
    } else {
        prop_assert_eq!(origin.as_str(), PATH);
        prop_assert!(
            FIELDS
                .iter()
                .any(|f| message.starts_with(&format!("{f}: "))),
            "neither a line nor a key: {shown}"
        );
    }
    Ok(())
}

fn check_bytes(bytes: &[u8]) -> Result<(), TestCaseError> {
    let answer = Manifest::parse_bytes(Path::new(PATH), bytes);
    match std::str::from_utf8(bytes) {
        Ok(text) => {
            prop_assert_eq!(
                answer.is_ok(),
                Manifest::parse(Path::new(PATH), text).is_ok()
            );
            check_answer(text)
        }
        Err(utf8) => {
            let e = answer.expect_err("invalid UTF-8 accepted");
            let line = bytes[..utf8.valid_up_to()]
                .iter()
                .filter(|b| **b == b'\n')
                .count()
                + 1;
            prop_assert!(
                e.to_string().starts_with(&format!("{PATH}:{line}: ")),
                "{}",
                e
            );
            prop_assert!(e.to_string().contains("UTF-8"), "{}", e);
            Ok(())
        }
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    Truncate(usize),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    DropLine(usize),
    DuplicateLine(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let noise = prop_oneof![
        prop::collection::vec(any::<u8>(), 1..6),
        prop::sample::select(vec![
            b"\"".to_vec(),
            b"[".to_vec(),
            b"=".to_vec(),
            b"\n".to_vec(),
            b"{".to_vec(),
            b"}".to_vec(),
            b"'".to_vec(),
            b"\xff".to_vec(),
            b"[xds]\n".to_vec(),
            b"[bounds]\n".to_vec(),
        ]),
    ];
    prop_oneof![
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), noise).prop_map(|(at, b)| Mutation::Insert(at, b)),
        (any::<usize>(), 1usize..30).prop_map(|(at, n)| Mutation::Delete(at, n)),
        any::<usize>().prop_map(Mutation::DropLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
    ]
}

fn mutate(bytes: &[u8], m: &Mutation) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let mut lines: Vec<&[u8]> = bytes.split(|c| *c == b'\n').collect();
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
            b = lines.join(&b'\n');
        }
        Mutation::DuplicateLine(i) => {
            let l = lines[i % n];
            lines.insert(i % n, l);
            b = lines.join(&b'\n');
        }
    }
    b
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn garbage_text_gets_an_answer(text in "\\PC{0,300}") {
        check_answer(&text)?;
    }

    #[test]
    fn garbage_bytes_get_an_answer(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        check_bytes(&bytes)?;
    }

    #[test]
    fn mutated_examples_get_an_answer(
        file in prop::sample::select(EXAMPLES),
        ms in prop::collection::vec(mutation(), 1..4),
    ) {
        let mut bytes = file.as_bytes().to_vec();
        for m in &ms {
            bytes = mutate(&bytes, m);
        }
        check_bytes(&bytes)?;
    }

    /// An example's tree with keys removed, set to other real or wrong values, or added in the
    /// wrong table.
    #[test]
    fn recombined_manifests_get_an_answer(
        file in prop::sample::select(EXAMPLES),
        edits in prop::collection::vec(
            (prop::sample::select(KEYS), prop::sample::select(KEYS), prop::sample::select(values()), 0u8..3),
            1..6,
        ),
    ) {
        let mut t: Table = file.parse().expect("example is TOML");
        for ((table, key), (other_table, _), value, op) in &edits {
            // Op 0 removes, 1 sets, 2 sets the key inside another table (where it does not belong).
            let at = if *op == 2 { other_table } else { table };
            let target = if at.is_empty() {
                Some(&mut t)
            } else {
                let entry = t
                    .entry((*at).to_owned())
                    .or_insert_with(|| Value::Table(Table::new()));
                entry.as_table_mut()
            };
            let Some(target) = target else { continue };
            if *op == 0 {
                target.remove(*key);
            } else {
                target.insert((*key).to_owned(), value.clone());
            }
        }
        if let Ok(text) = toml::to_string(&t) {
            check_answer(&text)?;
        }
    }
}

/// Regression: a manifest that is not UTF-8 is refused with the file and the bad byte's line.
#[test]
fn invalid_utf8_names_file_and_line() {
    let e = Manifest::parse_bytes(
        Path::new("m/proxy.toml"),
        b"name = \"x\"\ncommand = \"\xc3\"\n",
    )
    .expect_err("invalid UTF-8");
    assert_eq!(e.kind(), "manifest_invalid");
    assert!(e.to_string().starts_with("m/proxy.toml:2: "), "{e}");
}

/// The examples load through the byte loader.
#[test]
fn examples_load_as_bytes() {
    for text in EXAMPLES {
        Manifest::parse_bytes(Path::new(PATH), text.as_bytes()).unwrap();
    }
}
