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
