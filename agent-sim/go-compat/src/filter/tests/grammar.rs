//! The grammar against go-bexpr v0.1.2's own parser tests (`grammar_test.go`): the same inputs
//! give the same trees, and the same bad inputs the same messages, positions included.

use super::support::show;
use crate::filter::grammar::parse;

fn tree(input: &str) -> String {
    match parse(input) {
        Ok(e) => show(&e),
        Err(e) => panic!("{input:?} should parse: {e}"),
    }
}

#[test]
fn trees_match_go_bexpr() {
    let cases = [
        ("foo == 3", r#"foo Equal "3""#),
        ("foo != xyz", r#"foo Not Equal "xyz""#),
        ("list is empty", "list Is Empty"),
        ("list is not empty", "list Is Not Empty"),
        ("foo in bar", r#"bar In "foo""#),
        ("foo not in bar", r#"bar Not In "foo""#),
        ("bar contains foo", r#"bar In "foo""#),
        ("bar not contains foo", r#"bar Not In "foo""#),
        ("foo matches bar", r#"foo Matches "bar""#),
        ("foo not matches bar", r#"foo Not Matches "bar""#),
        ("not prod in tags", r#"(not tags In "prod")"#),
        (
            "port != 80 and port != 8080",
            r#"(port Not Equal "80" and port Not Equal "8080")"#,
        ),
        (
            "port == 80 or port == 443",
            r#"(port Equal "80" or port Equal "443")"#,
        ),
        (r#"foo == "bar""#, r#"foo Equal "bar""#),
        (r#""foo" not in bar"#, r#"bar Not In "foo""#),
        ("foo != `bar`", r#"foo Not Equal "bar""#),
        ("`foo` in bar", r#"bar In "foo""#),
        (
            "x in foo and not str == something or list is empty",
            r#"((foo In "x" and (not str Equal "something")) or list Is Empty)"#,
        ),
        (
            "x in foo and not (str == something or list is empty)",
            r#"(foo In "x" and (not (str Equal "something" or list Is Empty)))"#,
        ),
        ("\t\r\n  foo \t\r\n == \t\r\n x \t\r\n", r#"foo Equal "x""#),
        (
            "\t\r\n  foo \t\r\n not \t\r\n in \t\r\n x \t\r\n",
            r#"x Not In "foo""#,
        ),
        (
            "\t\r\n  foo \t\r\n is \t\r\n not \t\r\n empty \t\r\n",
            "foo Is Not Empty",
        ),
        (
            "\t\r\n not \t\r\n  foo \t\r\n in \t\r\n x \t\r\n",
            r#"(not x In "foo")"#,
        ),
        (
            "\t\r\n foo \t\r\n == \t\r\n x \t\r\n or \t\r\n y \t\r\n is \t\r\n empty \t\r\n",
            r#"(foo Equal "x" or y Is Empty)"#,
        ),
        (
            "\t\r\n ( \t\r\n foo \t\r\n == \t\r\n x \t\r\n ) \t\r\n",
            r#"foo Equal "x""#,
        ),
        (
            "`environment` in foo.bar[\"meta\"].tags[\t`ENV` ]",
            r#"foo|bar|meta|tags|ENV In "environment""#,
        ),
        (
            r#"environment in foo["bar"]["meta"]["tags"]["ENV"]"#,
            r#"foo|bar|meta|tags|ENV In "environment""#,
        ),
        (
            "environment in foo.bar.meta.tags.ENV",
            r#"foo|bar|meta|tags|ENV In "environment""#,
        ),
        (
            "environment in foo[\"abc-def ghi åß∂ƒ\"]",
            r#"foo|abc-def ghi åß∂ƒ In "environment""#,
        ),
        ("foo == 0.2", r#"foo Equal "0.2""#),
        ("foo == 11.11", r#"foo Equal "11.11""#),
        ("foo == -0.2", r#"foo Equal "-0.2""#),
        ("not not foo == 3", r#"foo Equal "3""#),
        (
            "(((foo == 3) and (not ((bar in baz) and (not (one != two))))) or (((next is empty) and (not (foo is not empty))) and (bar not in foo)))",
            concat!(
                r#"((foo Equal "3" and (not (baz In "bar" and (not one Not Equal "two")))) or "#,
                r#"((next Is Empty and (not foo Is Not Empty)) and foo Not In "bar"))"#
            ),
        ),
    ];
    for (input, want) in cases {
        assert_eq!(tree(input), want, "input {input:?}");
    }
}

#[test]
fn values_and_selectors_as_written() {
    let cases = [
        // A selector used as a value is its segments joined with dots.
        ("foo == a.b", r#"foo Equal "a.b""#),
        (r#"foo == x["y.z"]"#, r#"foo Equal "x.y.z""#),
        // Go escapes in double quotes; none in backquotes.
        (r#"foo == "a\tb\u00e9\x41\101""#, r#"foo Equal "a\tbéAA""#),
        (r"foo == `a\tb`", r#"foo Equal "a\\tb""#),
        ("foo == \"\"", r#"foo Equal """#),
        // Keywords need whitespace after them, so they can start selectors.
        ("notfoo == 1", r#"notfoo Equal "1""#),
        ("android in tags", r#"tags In "android""#),
        // Operators that need no surrounding whitespace.
        ("foo==1", r#"foo Equal "1""#),
        ("(foo!=1)", r#"foo Not Equal "1""#),
    ];
    for (input, want) in cases {
        assert_eq!(tree(input), want, "input {input:?}");
    }
}

#[test]
fn errors_match_go_bexpr() {
    let cases = [
        (
            "foo == \"12x",
            r#"1:12 (11): rule "string": Unterminated string literal"#,
        ),
        (
            "foo == `12x",
            r#"1:12 (11): rule "string": Unterminated string literal"#,
        ),
        (
            "foo == 3x",
            r#"1:9 (8): rule "number": Invalid number literal"#,
        ),
        ("foo[3] == abc", r#"1:5 (4): rule "index": Invalid index"#),
        (
            "x in foo[\"abc\"",
            r#"1:15 (14): rule "index": Unclosed index expression"#,
        ),
        (
            "foo[\"abc\" == 3",
            r#"1:11 (10): rule "index": Unclosed index expression"#,
        ),
        ("x in 32", r#"1:6 (5): rule "match": Invalid selector"#),
        (
            "32 == 32",
            r#"1:4 (3): no match found, expected: "in", "not" or [ \t\r\n]"#,
        ),
        (
            "32 is empty",
            r#"1:4 (3): no match found, expected: "in", "not" or [ \t\r\n]"#,
        ),
        (
            "x in foo abc",
            r#"1:10 (9): no match found, expected: "and", "or", [ \t\r\n] or EOF"#,
        ),
        (
            "x in foo and ",
            r#"1:14 (13): no match found, expected: "(", "-", "0", "\"", "`", "not", [ \t\r\n], [1-9] or [a-zA-Z]"#,
        ),
        (
            "x in foo or ",
            r#"1:13 (12): no match found, expected: "(", "-", "0", "\"", "`", "not", [ \t\r\n], [1-9] or [a-zA-Z]"#,
        ),
        (
            "x in foo or not ",
            r#"1:17 (16): no match found, expected: "!=", "(", "-", "0", "==", "\"", "`", "contains", "in", "is", "matches", "not", [ \t\r\n], [1-9] or [a-zA-Z]"#,
        ),
        (
            "(foo == 4",
            r#"1:10 (9): rule "grouping": Unmatched parentheses"#,
        ),
    ];
    for (input, want) in cases {
        assert_eq!(
            parse(input).map(|e| show(&e)),
            Err(want.to_owned()),
            "input {input:?}"
        );
    }
}

/// Cases beyond go-bexpr's vectors, worked out from the grammar and the pigeon runtime rules.
#[test]
fn errors_derived_from_the_grammar() {
    let cases = [
        // A value is missing: the alternatives of Value and the optional whitespace before it.
        (
            "Kind ==",
            r#"1:8 (7): no match found, expected: "-", "0", "\"", "`", [ \t\r\n], [1-9] or [a-zA-Z]"#,
        ),
        // An unquoted value cannot contain a dash.
        (
            "Kind == connect-proxy",
            r#"1:16 (15): no match found, expected: ".", "[", [ \t\r\n], [a-zA-Z0-9_] or EOF"#,
        ),
        // A selector alone.
        (
            "Service",
            r#"1:8 (7): no match found, expected: "!=", ".", "==", "[", [ \t\r\n] or [a-zA-Z0-9_]"#,
        ),
        // Lines count from 1, columns in characters; a newline starts the next line.
        (
            "x in foo\nabc",
            r#"2:1 (9): no match found, expected: "and", "or", [ \t\r\n] or EOF"#,
        ),
        (
            "é == 1",
            r#"1:1 (0): no match found, expected: "(", "-", "0", "\"", "`", "not", [ \t\r\n], [1-9] or [a-zA-Z]"#,
        ),
        // strconv.Unquote failures are reported at the literal's start.
        (
            r#"foo == "\q""#,
            r#"1:8 (7): rule "string": invalid syntax"#,
        ),
        (
            r#"foo == "\'""#,
            r#"1:8 (7): rule "string": invalid syntax"#,
        ),
        // An escaped quote does not exist: the literal ends there and the rest is garbage.
        (
            r#"foo == "a\"b""#,
            r#"1:8 (7): rule "string": invalid syntax"#,
        ),
        // Numbers need quotes in any base but 10.
        (
            "Port == 0x50",
            r#"1:10 (9): rule "number": Invalid number literal"#,
        ),
        // Nested unclosed parentheses report once.
        (
            "((x == 1",
            r#"1:9 (8): rule "grouping": Unmatched parentheses"#,
        ),
        (
            "",
            r#"1:1 (0): no match found, expected: "(", "-", "0", "\"", "`", "not", [ \t\r\n], [1-9] or [a-zA-Z]"#,
        ),
    ];
    for (input, want) in cases {
        assert_eq!(
            parse(input).map(|e| show(&e)),
            Err(want.to_owned()),
            "input {input:?}"
        );
    }
}
