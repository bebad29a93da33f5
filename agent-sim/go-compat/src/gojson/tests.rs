//! Byte-exact comparisons with what Go's encoder writes for the same values.

use serde_json::json;

use super::{compact, pretty};

#[test]
fn compact_escapes_html_like_go() {
    let v = json!({"Meta": {"q": "a<b>&c\u{2028}d\u{2029}", "n": "\"\\\n\u{1}"}});
    assert_eq!(
        String::from_utf8(compact(&v)).unwrap(),
        r#"{"Meta":{"q":"a\u003cb\u003e\u0026c\u2028d\u2029","n":"\"\\\n\u0001"}}"#
    );
}

#[test]
fn pretty_is_marshal_indent_with_four_spaces_and_newline() {
    // Go: json.MarshalIndent(v, "", "    ") + "\n"
    let v = json!({"A": [1, {"B": "<"}], "E": [], "O": {}, "N": null});
    let want = "{\n    \"A\": [\n        1,\n        {\n            \"B\": \"\\u003c\"\n        }\n    ],\n    \"E\": [],\n    \"O\": {},\n    \"N\": null\n}\n";
    assert_eq!(String::from_utf8(pretty(&v)).unwrap(), want);
}

#[test]
fn keys_are_escaped_too() {
    let v = json!({"<k>": 1});
    assert_eq!(
        String::from_utf8(compact(&v)).unwrap(),
        r#"{"\u003ck\u003e":1}"#
    );
}

fn arb_value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        "\\PC{0,12}".prop_map(serde_json::Value::from),
        "[<>&\u{2028}\u{2029}a\"\\\\]{0,8}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
            proptest::collection::btree_map("[a-z<&]{0,4}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest::proptest! {
    /// Both forms decode to the same value, never carry a raw `<`, `>`, `&`, U+2028 or U+2029,
    /// and the pretty form is the compact one re-indented (same tokens, four-space steps).
    #[test]
    fn round_trips_and_escapes(v in arb_value()) {
        let c = String::from_utf8(compact(&v)).unwrap();
        let p = String::from_utf8(pretty(&v)).unwrap();
        proptest::prop_assert_eq!(serde_json::from_str::<serde_json::Value>(&c).unwrap(), v.clone());
        proptest::prop_assert_eq!(serde_json::from_str::<serde_json::Value>(&p).unwrap(), v);
        for s in [&c, &p] {
            proptest::prop_assert!(!s.contains(['<', '>', '&', '\u{2028}', '\u{2029}']), "{}", s);
        }
        proptest::prop_assert!(p.ends_with('\n'));
        for line in p.lines() {
            let indent = line.len() - line.trim_start_matches(' ').len();
            proptest::prop_assert_eq!(indent % 4, 0, "{}", line);
        }
    }
}
