//! Escaping of untrusted text (proxy output, labels, names) for HTML/SVG, plus removal of
//! terminal escape sequences and control characters before any rendering.

use std::borrow::Cow;

/// Drops ANSI CSI sequences (`ESC [ ... final`) and other `ESC x` pairs, and replaces every
/// other control character except tab, newline and carriage return with U+FFFD.
pub(crate) fn clean(s: &str) -> Cow<'_, str> {
    if !s
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
    {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\t' | '\n' | '\r' => out.push(c),
            // CSI (`ESC [` parameters, final byte in @..~) is dropped whole; any other
            // two-character escape (`ESC x`) loses both characters.
            '\u{1b}' => {
                if chars.next() == Some('[') {
                    for p in chars.by_ref() {
                        if ('@'..='~').contains(&p) {
                            break;
                        }
                    }
                }
            }
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Escapes text for HTML element content and quoted attribute values (and for SVG inside
/// HTML): `& < > " '`. Also [`clean`]s it.
pub(crate) fn html(s: &str) -> String {
    let s = clean(s);
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_escapes_markup_and_quotes() {
        assert_eq!(
            html(r#"<script>alert("x" + 'y')</script> & co"#),
            "&lt;script&gt;alert(&quot;x&quot; + &#39;y&#39;)&lt;/script&gt; &amp; co"
        );
        // Already-escaped text is escaped again, not trusted.
        assert_eq!(html("&lt;"), "&amp;lt;");
        assert_eq!(html("plain → text"), "plain → text");
    }

    #[test]
    fn clean_strips_terminal_escapes_and_controls() {
        assert_eq!(clean("\u{1b}[1;31mERROR\u{1b}[0m bind"), "ERROR bind");
        assert_eq!(clean("a\u{0}b\u{7}c\td\r\n"), "a\u{fffd}b\u{fffd}c\td\r\n");
        assert_eq!(clean("\u{1b}7saved\u{1b}"), "saved");
        assert!(matches!(clean("nothing to do"), Cow::Borrowed(_)));
    }
}
