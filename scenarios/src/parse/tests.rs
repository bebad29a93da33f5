//! Tests of the loader: errors name file, line and field; nothing panics on any input.

use proptest::prelude::*;

use super::*;
use crate::model::{Check, Identity, Outcome, Step};

const HEAD: &str = r#"id = "x"
description = "d"
profile = "core"
"#;

/// Parses HEAD + `body` as `catalogue/core/x.toml`; the error.
fn err(body: &str) -> ScenarioError {
    parse("catalogue/core/x.toml", &format!("{HEAD}{body}")).unwrap_err()
}

/// (line, field, message) of the error.
fn triple(body: &str) -> (Option<usize>, Option<String>, String) {
    let e = err(body);
    assert_eq!(e.path, "catalogue/core/x.toml");
    (e.line, e.field, e.message)
}

#[test]
fn a_minimal_scenario_loads() {
    let s = parse("x.toml", HEAD).unwrap();
    assert_eq!(s.id, "x");
    assert!(s.steps.is_empty());
}

#[test]
fn unknown_variant_inside_nested_tagged_tables_names_the_field_and_line() {
    let body = r#"
[[steps]]
do = "mark"
name = "a"

[[steps]]
do = "expect"
name = "n"
check = { kind = "inbound", identity = { kind = "bogus" }, outcome = "allowed" }
"#;
    let e = err(body);
    assert_eq!(e.line, Some(12));
    assert_eq!(e.field.as_deref(), Some("steps[1].check.identity"));
    assert!(
        e.message
            .starts_with("unknown variant `bogus`, expected one of `service`"),
        "{}",
        e.message
    );
    assert!(
        e.to_string().starts_with(
            "catalogue/core/x.toml:12: steps[1].check.identity: unknown variant `bogus`"
        ),
        "{e}"
    );
}

#[test]
fn missing_fields_point_at_the_table_that_lacks_them() {
    let (line, field, msg) = triple("\n[[steps]]\ndo = \"open\"\nconn = \"c\"\n");
    assert_eq!((line, field.as_deref()), (Some(5), Some("steps[0]")));
    assert_eq!(msg, "missing field `identity`");

    let (line, field, msg) = triple(
        "\n[[steps]]\ndo = \"expect\"\nname = \"n\"\ncheck = { kind = \"inbound\", identity = { kind = \"service\" }, outcome = \"allowed\" }\n",
    );
    assert_eq!(
        (line, field.as_deref()),
        (Some(8), Some("steps[0].check.identity"))
    );
    assert_eq!(msg, "missing field `service`");

    let (line, field, msg) = triple("\n[[steps]]\nname = \"a\"\n");
    assert_eq!((line, field.as_deref()), (Some(5), Some("steps[0]")));
    assert_eq!(msg, "missing field `do`");

    let (line, field, msg) = err_top("id = \"x\"\nprofile = \"core\"\n");
    assert_eq!(
        (line, field, msg.as_str()),
        (Some(1), None, "missing field `description`")
    );
}

fn err_top(text: &str) -> (Option<usize>, Option<String>, String) {
    let e = parse("t.toml", text).unwrap_err();
    (e.line, e.field, e.message)
}

#[test]
fn type_errors_and_unknown_fields_name_the_field() {
    let (line, field, msg) = triple(
        "\n[[steps]]\ndo = \"expect\"\nname = \"n\"\ncheck = { kind = \"conn-open\", conn = \"c\" }\nwithin = 5\n",
    );
    assert_eq!((line, field.as_deref()), (Some(9), Some("steps[0].within")));
    assert_eq!(msg, "invalid type: integer `5`, expected a string");

    let (line, field, msg) = triple("\n[[steps]]\ndo = \"clear-faults\"\nhard = true\n");
    assert_eq!((line, field.as_deref()), (Some(7), Some("steps[0].hard")));
    assert!(msg.starts_with("unknown field `hard`"), "{msg}");

    let (line, field, msg) = triple("\n[setup]\nacl_default_policy = \"maybe\"\n");
    assert_eq!(
        (line, field.as_deref()),
        (Some(6), Some("setup.acl_default_policy"))
    );
    assert!(msg.starts_with("unknown variant `maybe`"), "{msg}");

    let (line, field, msg) = triple("\n[[steps]]\ndo = 3\n");
    assert_eq!((line, field.as_deref()), (Some(6), Some("steps[0].do")));
    assert_eq!(msg, "invalid type: number, expected a string");

    let (line, field, msg) = triple("\n[[steps]]\ndo = \"jump\"\n");
    assert_eq!((line, field.as_deref()), (Some(5), Some("steps[0]")));
    assert!(
        msg.starts_with("unknown variant `jump`, expected one of `intention`"),
        "{msg}"
    );

    let (line, field, _) = triple("steps = [1]\n");
    assert_eq!((line, field.as_deref()), (Some(4), Some("steps[0]")));
}

#[test]
fn syntax_errors_carry_toml_line() {
    let (line, field, msg) = triple("\n[[steps]]\ndo = \"mark\"\nname = \n");
    assert_eq!((line, field), (Some(7), None));
    assert!(!msg.is_empty());
    let (line, _, _) = err_top("id = \"x\"\nid = \"y\"\n");
    assert_eq!(line, Some(2), "duplicate key");
}

#[test]
fn validation_errors_carry_line_and_field() {
    let (line, field, msg) = triple(
        "\n[[steps]]\ndo = \"expect\"\nname = \"n\"\ncheck.kind = \"conn-open\"\ncheck.conn = \"c1\"\n",
    );
    assert_eq!(
        (line, field.as_deref()),
        (Some(9), Some("steps[0].check.conn"))
    );
    assert_eq!(msg, "no earlier `open` step opened connection \"c1\"");

    let (line, field, msg) = triple("catches = [\"ignore-deny\", \"ignore-everything\"]\n");
    assert_eq!((line, field.as_deref()), (Some(4), Some("catches[1]")));
    assert!(
        msg.starts_with("unknown broken behaviour \"ignore-everything\""),
        "{msg}"
    );

    let (line, field, msg) = triple("\n[setup]\nleaf_ttl = \"5 s\"\n");
    assert_eq!((line, field.as_deref()), (Some(6), Some("setup.leaf_ttl")));
    assert_eq!(msg, "time: unknown unit \" s\" in duration \"5 s\"");

    let (line, field, _) = triple("\n[[setup.config_entries]]\nKind = \"service-resolver\"\n");
    assert_eq!(
        (line, field.as_deref()),
        (Some(5), Some("setup.config_entries[0]"))
    );
}

#[test]
fn a_full_step_round_trips_through_the_mirrors() {
    let s = parse(
        "x.toml",
        &format!(
            "{HEAD}\n[[steps]]\ndo = \"open\"\nconn = \"c\"\nidentity = {{ kind = \"common-name-mismatch\", common_name = \"web\", service = \"api\" }}\n\n[[steps]]\ndo = \"expect\"\nname = \"n\"\ncheck = {{ kind = \"inbound\", identity = {{ kind = \"no-cert\" }}, outcome = \"refused\" }}\nstable_for = \"stable\"\n"
        ),
    )
    .unwrap();
    assert_eq!(
        s.steps[0],
        Step::Open {
            conn: "c".into(),
            identity: Identity::CommonNameMismatch {
                common_name: "web".into(),
                service: "api".into()
            },
            protocol: crate::model::ConnProtocol::Tcp,
        }
    );
    let Step::Expect(e) = &s.steps[1] else {
        panic!("not an expect step")
    };
    assert_eq!(
        e.check,
        Check::Inbound {
            identity: Identity::NoCert,
            outcome: Outcome::Refused,
            via: crate::model::InboundVia::PublicListener,
        }
    );
    assert_eq!(e.stable_for.as_deref(), Some("stable"));
}

#[test]
fn lines_count_from_one_and_clamp() {
    assert_eq!(line_of("", 0), 1);
    assert_eq!(line_of("a\nb\n", 2), 2);
    assert_eq!(line_of("a\nb\n", 99), 3);
}

/// Every catalogue file, for mutation.
fn corpus() -> Vec<&'static str> {
    crate::catalogue_files()
        .into_iter()
        .map(|(_, t)| t)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = parse("fuzz.toml", &text);
    }

    #[test]
    fn mutated_catalogue_files_never_panic(
        file in 0usize..64,
        edits in proptest::collection::vec((any::<u16>(), 0u8..4, any::<u8>()), 1..8),
    ) {
        let files = corpus();
        let mut text: Vec<u8> = files[file % files.len()].as_bytes().to_vec();
        for (at, op, byte) in edits {
            if text.is_empty() { break; }
            let i = usize::from(at) % text.len();
            match op {
                0 => { text.remove(i); }
                1 => text.insert(i, byte),
                2 => text[i] = byte,
                // Truncate: the most common accident with a file.
                _ => text.truncate(i),
            }
        }
        let text = String::from_utf8_lossy(&text);
        if let Err(e) = parse("mutated.toml", &text) {
            // Every error names a line in the file.
            let lines = text.lines().count().max(1) + 1;
            prop_assert!(e.line.is_some_and(|l| l >= 1 && l <= lines), "{e}");
        }
    }

    #[test]
    fn mutated_values_in_steps_never_panic(
        file in 0usize..64,
        target in any::<u16>(),
        replacement in prop_oneof![
            Just("\"\"".to_owned()), Just("-1".to_owned()), Just("1e400".to_owned()),
            Just("[]".to_owned()), Just("{}".to_owned()), Just("\"*\"".to_owned()),
            Just("\"-5s\"".to_owned()), Just("99999999999999999999".to_owned()),
            Just("{ kind = \"named\", name = \"nope\" }".to_owned()),
            "\"[a-z*.-]{0,12}\"",
        ],
    ) {
        // Replace the value of one `key = value` line with something odd.
        let files = corpus();
        let text = files[file % files.len()];
        let lines: Vec<&str> = text.lines().collect();
        let candidates: Vec<usize> = lines.iter().enumerate()
            .filter(|(_, l)| !l.starts_with('#') && l.contains(" = "))
            .map(|(i, _)| i).collect();
        prop_assume!(!candidates.is_empty());
        let pick = candidates[usize::from(target) % candidates.len()];
        let mut out = String::new();
        for (i, l) in lines.iter().enumerate() {
            if i == pick {
                let key = l.split(" = ").next().unwrap_or("");
                out.push_str(&format!("{key} = {replacement}\n"));
            } else {
                out.push_str(l);
                out.push('\n');
            }
        }
        let _ = parse("mutated.toml", &out);
    }
}
