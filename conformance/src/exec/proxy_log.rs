//! The `proxy-log` check: whether the proxy's captured output (stdout and stderr) has a line
//! saying what the scenario expects (e.g. why it refuses: a 403 from the agent). Terminal colour
//! codes are removed and the match ignores ASCII case, so log formats only need to carry the text.

use super::wait::Observation;
use crate::proxy::OutputRing;

/// Why the check does not apply to a proxy configured over xDS.
pub(crate) const NOT_FOR_XDS: &str = "not supported for a proxy configured over xDS: its \
    control plane (the agent, Consul's proxycfg) reads the ACL-protected data with the proxy's \
    token and logs a 403 itself; the proxy is only sent the configuration that results";

/// One observation of `streams` for a line containing one of `contains`.
pub(crate) fn observe(streams: &[&OutputRing], contains: &[String]) -> Observation {
    let wanted: Vec<String> = contains.iter().map(|t| t.to_ascii_lowercase()).collect();
    let mut lines = 0usize;
    for ring in streams {
        for (at, line) in ring.lines() {
            lines += 1;
            let plain = strip_ansi(&line);
            if wanted
                .iter()
                .any(|w| plain.to_ascii_lowercase().contains(w.as_str()))
            {
                return Observation::new(true, format!("at {at} ms: {}", clip(plain.trim())));
            }
        }
    }
    Observation::new(
        false,
        format!("none of the {lines} captured output line(s) contains one of {contains:?}"),
    )
}

/// `line` without ANSI escape sequences (`ESC [ ... final byte`).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
    }
    out
}

/// At most 300 characters of `s`.
fn clip(s: &str) -> String {
    match s.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use tokio::time::Instant;

    use super::*;

    #[test]
    fn finds_a_coloured_line_ignoring_case() {
        let ring = OutputRing::new(4096, Instant::now());
        ring.push("\u{1b}[32m INFO\u{1b}[0m started".into());
        ring.push(
            "\u{1b}[31mERROR\u{1b}[0m may not read (403) \u{1b}[3mwatch\u{1b}[0m=health".into(),
        );
        let got = observe(&[&ring], &["permission DENIED".into(), "(403)".into()]);
        assert!(got.ok, "{}", got.text);
        assert!(
            got.text.contains("ERROR may not read (403) watch=health"),
            "{}",
            got.text
        );
    }

    #[test]
    fn fails_when_no_line_says_it() {
        let ring = OutputRing::new(4096, Instant::now());
        ring.push("listening".into());
        let got = observe(&[&ring], &["403".into()]);
        assert!(!got.ok);
        assert!(got.text.contains("none of the 1 captured"), "{}", got.text);
    }
}
