//! Command templates: shell-words splitting (no shell is run) and `{placeholder}` substitution
//! in each word, so substituted values containing spaces stay one argument.
//!
//! Placeholders: `{proxy_id}`, `{service}`, `{agent_addr}`, `{token}`, `{token_file}`, `{exe}`,
//! for transparent mode's redirect command `{proxy_uid}` and `{app_port}`, and for proxies
//! configured over xDS (feature `xds`) `{grpc_addr}`, `{bootstrap}` and `{admin_port}`.
//! `{{` and `}}` stand for literal braces.

use std::collections::BTreeMap;

use crate::error::Error;

/// Every placeholder a template may use.
pub const PLACEHOLDERS: [&str; 11] = [
    "proxy_id",
    "service",
    "agent_addr",
    "token",
    "token_file",
    "exe",
    "proxy_uid",
    "app_port",
    "grpc_addr",
    "bootstrap",
    "admin_port",
];

/// The placeholders that exist only for a proxy configured over xDS (feature `xds`): the
/// agent's gRPC address, the bootstrap file written per scenario, and Envoy's admin port.
pub const XDS_PLACEHOLDERS: [&str; 3] = ["grpc_addr", "bootstrap", "admin_port"];

/// Values for the placeholders of one scenario.
pub type Vars = BTreeMap<&'static str, String>;

/// Splits `template` like a POSIX shell would split words (single quotes literal, double quotes
/// with `\"`, `\\`, `\$`, `` \` `` escapes, backslash escapes outside quotes), then substitutes
/// the placeholders in each word.
pub fn render(template: &str, vars: &Vars) -> Result<Vec<String>, Error> {
    let words = split(template).map_err(|message| Error::Template {
        template: template.to_owned(),
        message,
    })?;
    if words.is_empty() {
        return Err(Error::Template {
            template: template.to_owned(),
            message: "the command is empty".into(),
        });
    }
    words
        .iter()
        .map(|w| {
            substitute(w, vars).map_err(|message| Error::Template {
                template: template.to_owned(),
                message,
            })
        })
        .collect()
}

/// Checks a template without values: it splits and names only known placeholders.
pub fn check(template: &str) -> Result<(), Error> {
    let vars: Vars = PLACEHOLDERS.iter().map(|p| (*p, String::new())).collect();
    render(template, &vars).map(|_| ())
}

/// The xDS-only placeholders ([`XDS_PLACEHOLDERS`]) `template` uses, in order of appearance.
pub fn xds_placeholders_used(template: &str) -> Result<Vec<&'static str>, Error> {
    check(template)?;
    let words = split(template).map_err(|message| Error::Template {
        template: template.to_owned(),
        message,
    })?;
    let mut used = Vec::new();
    for w in &words {
        // Each placeholder rendered as a marker nothing else can produce.
        let vars: Vars = PLACEHOLDERS
            .iter()
            .map(|p| (*p, format!("\u{0}{p}\u{0}")))
            .collect();
        let rendered = substitute(w, &vars).unwrap_or_default();
        for p in XDS_PLACEHOLDERS {
            if rendered.contains(&format!("\u{0}{p}\u{0}")) && !used.contains(&p) {
                used.push(p);
            }
        }
    }
    Ok(used)
}

/// Shell-words splitting.
pub(crate) fn split(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => cur.push(c),
                        None => return Err("unterminated single quote".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => cur.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                cur.push('\\');
                                cur.push(c);
                            }
                            None => return Err("unterminated double quote".into()),
                        },
                        Some(c) => cur.push(c),
                        None => return Err("unterminated double quote".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some('\n') => {}
                    Some(c) => cur.push(c),
                    None => return Err("trailing backslash".into()),
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

/// Replaces `{name}` in one word.
pub(crate) fn substitute(word: &str, vars: &Vars) -> Result<String, String> {
    let mut out = String::with_capacity(word.len());
    let mut rest = word;
    while let Some(pos) = rest.find(['{', '}']) {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        if let Some(t) = tail.strip_prefix("{{") {
            out.push('{');
            rest = t;
        } else if let Some(t) = tail.strip_prefix("}}") {
            out.push('}');
            rest = t;
        } else if let Some(t) = tail.strip_prefix('{') {
            let end = t
                .find('}')
                .ok_or_else(|| format!("unclosed placeholder in {word:?}"))?;
            let name = &t[..end];
            let value = vars.get(name).ok_or_else(|| {
                format!(
                    "unknown placeholder {{{name}}}; known: {}",
                    PLACEHOLDERS.map(|p| format!("{{{p}}}")).join(", ")
                )
            })?;
            out.push_str(value);
            rest = &t[end + 1..];
        } else {
            return Err(format!(
                "stray '}}' in {word:?} (write '}}}}' for a literal one)"
            ));
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests;
