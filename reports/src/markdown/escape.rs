//! Markdown escaping of untrusted text: inline text (also safe in table cells), code spans and
//! fenced blocks.

use crate::escape::clean;

/// Inline text: HTML-significant characters as entities, Markdown punctuation
/// backslash-escaped (including `|`, so it is safe in table cells), newlines as `<br>`.
pub(crate) fn text(s: &str) -> String {
    let s = clean(s);
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '#' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("<br>"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

/// A code span (not for table cells): a backtick fence longer than any backtick run inside,
/// newlines as spaces.
pub(crate) fn code(s: &str) -> String {
    let s = clean(s).replace(['\n', '\r'], " ");
    let fence = "`".repeat(longest_run(&s, '`') + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') || s.is_empty() {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// A fenced code block whose fence is longer than any backtick run inside; ends with a newline.
pub(crate) fn fenced(s: &str) -> String {
    let s = clean(s);
    let fence = "`".repeat((longest_run(&s, '`') + 1).max(3));
    let body = s.trim_end_matches('\n');
    format!("{fence}text\n{body}\n{fence}\n")
}

fn longest_run(s: &str, ch: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for c in s.chars() {
        run = if c == ch { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_inert() {
        assert_eq!(
            text("<script>a|b</script> *x* [l](u) `c`"),
            "&lt;script&gt;a\\|b&lt;/script&gt; \\*x\\* \\[l\\](u) \\`c\\`"
        );
        assert_eq!(text("two\r\nlines & more"), "two<br>lines &amp; more");
    }

    #[test]
    fn code_spans_outlast_backticks() {
        assert_eq!(code("ca-rotation"), "`ca-rotation`");
        assert_eq!(code("a `b` c"), "``a `b` c``");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(code("multi\nline"), "`multi line`");
    }

    #[test]
    fn fences_outlast_backticks() {
        assert_eq!(fenced("log\n"), "```text\nlog\n```\n");
        assert_eq!(fenced("a ```` b"), "`````text\na ```` b\n`````\n");
    }
}
