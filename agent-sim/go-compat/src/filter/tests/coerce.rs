//! Go `strconv` behaviour (documented in Go's `strconv` package) reproduced by the coercions.

use crate::filter::coerce::{go_quote, parse_bool, parse_int, parse_uint, unquote};

#[test]
fn parse_int_base_zero() {
    let ok = [
        ("0", 0),
        ("42", 42),
        ("+7", 7),
        ("-7", -7),
        ("0x1F", 31),
        ("0X1f", 31),
        ("-0x10", -16),
        ("017", 15),
        ("0o17", 15),
        ("0O17", 15),
        ("0b101", 5),
        ("1_000", 1000),
        ("0x_1F", 31),
        ("0_1", 1),
        ("9223372036854775807", i64::MAX),
        ("-9223372036854775808", i64::MIN),
    ];
    for (s, want) in ok {
        assert_eq!(parse_int(s), Ok(want), "{s:?}");
    }
    let syntax = [
        "", "+", "-", "abc", "0x", "09", "1.5", "_1", "1_", "1__0", "0x_", " 1", "1e3",
    ];
    for s in syntax {
        assert_eq!(
            parse_int(s),
            Err(format!(
                "strconv.ParseInt: parsing {}: invalid syntax",
                go_quote(s)
            )),
            "{s:?}"
        );
    }
    for s in [
        "9223372036854775808",
        "-9223372036854775809",
        "99999999999999999999",
    ] {
        assert_eq!(
            parse_int(s),
            Err(format!(
                "strconv.ParseInt: parsing \"{s}\": value out of range"
            )),
        );
    }
}

#[test]
fn parse_uint_base_zero() {
    assert_eq!(parse_uint("18446744073709551615"), Ok(u64::MAX));
    assert_eq!(parse_uint("0xff"), Ok(255));
    assert_eq!(
        parse_uint("18446744073709551616"),
        Err("strconv.ParseUint: parsing \"18446744073709551616\": value out of range".to_owned())
    );
    assert_eq!(
        parse_uint("-1"),
        Err("strconv.ParseUint: parsing \"-1\": invalid syntax".to_owned())
    );
}

#[test]
fn parse_bool_accepts_gos_spellings_only() {
    for s in ["1", "t", "T", "TRUE", "true", "True"] {
        assert_eq!(parse_bool(s), Ok(true), "{s}");
    }
    for s in ["0", "f", "F", "FALSE", "false", "False"] {
        assert_eq!(parse_bool(s), Ok(false), "{s}");
    }
    for s in ["yes", "tRUE", "", "2"] {
        assert_eq!(
            parse_bool(s),
            Err(format!(
                "strconv.ParseBool: parsing {}: invalid syntax",
                go_quote(s)
            ))
        );
    }
}

#[test]
fn unquote_like_go() {
    let ok = [
        (r#""plain""#, "plain"),
        (r#""a\tb\n""#, "a\tb\n"),
        (r#""\a\b\f\r\v\\""#, "\u{7}\u{8}\u{c}\r\u{b}\\"),
        (r#""\x41\101\u00e9\U0001F600""#, "AAé😀"),
        ("`raw \\n`", "raw \\n"),
        ("`a\r\nb`", "a\nb"),
        ("``", ""),
    ];
    for (lit, want) in ok {
        assert_eq!(unquote(lit).as_deref(), Some(want), "{lit:?}");
    }
    let bad = [
        r#""\q""#,
        r#""\'""#,
        r#""\400""#,
        r#""\ud800""#,
        r#""\x4""#,
        r#""\""#,
        "\"a\nb\"",
        "\"unterminated",
    ];
    for lit in bad {
        assert_eq!(unquote(lit), None, "{lit:?}");
    }
}

#[test]
fn quote_like_go() {
    assert_eq!(go_quote("Service.Port"), r#""Service.Port""#);
    assert_eq!(go_quote("a\"b\\c\n\t"), r#""a\"b\\c\n\t""#);
    assert_eq!(go_quote("é ü"), "\"é ü\"");
    assert_eq!(go_quote("\u{1}\u{7f}"), r#""\x01\x7f""#);
}
