//! Go's text conventions that appear inside Consul's error bodies: `%q` quoting and
//! hashicorp/go-multierror's list format. One implementation for every module.

/// Go's `%q` / `strconv.Quote`: quotes, backslash escapes for `"`, `\` and control characters,
/// `\u`/`\U` for other non-printable runes; printable Unicode is kept as is.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if c == ' ' || !(c.is_control() || c.is_whitespace()) => out.push(c),
            c if u32::from(c) < 0x80 => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c if u32::from(c) < 0x1_0000 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push_str(&format!("\\U{:08x}", u32::from(c))),
        }
    }
    out.push('"');
    out
}

/// hashicorp/go-multierror's default `ListFormatFunc`.
pub fn multierror(errors: &[String]) -> String {
    if let [only] = errors {
        return format!("1 error occurred:\n\t* {only}\n\n");
    }
    let points: Vec<String> = errors.iter().map(|e| format!("* {e}")).collect();
    format!(
        "{} errors occurred:\n\t{}\n\n",
        errors.len(),
        points.join("\n\t")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_like_go() {
        assert_eq!(go_quote("db"), "\"db\"");
        assert_eq!(
            go_quote("a\"b\\c\n\t\u{1}\u{7f}"),
            "\"a\\\"b\\\\c\\n\\t\\x01\\x7f\""
        );
        assert_eq!(go_quote("é ü"), "\"é ü\"", "printable Unicode stays");
        assert_eq!(go_quote("\u{2028}"), "\"\\u2028\"");
    }

    #[test]
    fn multierror_format() {
        assert_eq!(multierror(&["x".into()]), "1 error occurred:\n\t* x\n\n");
        assert_eq!(
            multierror(&["x".into(), "y".into()]),
            "2 errors occurred:\n\t* x\n\t* y\n\n"
        );
    }
}
