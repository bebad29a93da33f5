//! The floors checker: which floor a file and a path belong to, and every `crate::` path and
//! `super::` chain of a file's code (comments, strings and test-only code blanked) that points
//! to a floor above the file's own or across the surfaces.

use std::collections::BTreeSet;
use std::fmt;

/// A floor: its level (higher may import lower) and its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Floor {
    pub(crate) level: u8,
    pub(crate) name: &'static str,
}

pub(crate) const FLOORS: [Floor; 6] = [
    Floor {
        level: 1,
        name: "go",
    },
    Floor {
        level: 2,
        name: "model",
    },
    Floor {
        level: 3,
        name: "state",
    },
    Floor {
        level: 4,
        name: "http",
    },
    Floor {
        level: 4,
        name: "xds",
    },
    Floor {
        level: 5,
        name: "assembly",
    },
];

/// The floor a module path (its first segment) belongs to.
pub(crate) fn floor_named(segment: &str) -> Option<Floor> {
    FLOORS.iter().copied().find(|f| f.name == segment)
}

/// One import that breaks the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    pub(crate) file: String,
    pub(crate) line: usize,
    pub(crate) path: String,
    pub(crate) why: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "agent-sim/src/{}:{}: `{}`: {}",
            self.file, self.line, self.path, self.why
        )
    }
}

/// The module path of a file under `src` (`state/store/leaf.rs` -> `[state, store, leaf]`).
pub(crate) fn module_path(rel: &str) -> Vec<String> {
    let trimmed = rel.strip_suffix(".rs").unwrap_or(rel);
    trimmed.split('/').map(str::to_owned).collect()
}

/// Blanks comments and the contents of string and char literals (keeping every newline), so
/// only code is searched and byte offsets still give line numbers.
pub(crate) fn strip(source: &str) -> Vec<u8> {
    let b = source.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = b[i..]
                    .iter()
                    .position(|c| *c == b'\n')
                    .map_or(b.len(), |p| i + p);
                blank(&mut out, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let (mut depth, mut j) = (1, i + 2);
                while j < b.len() && depth > 0 {
                    if b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
                        depth += 1;
                        j += 1;
                    } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
                        depth -= 1;
                        j += 1;
                    }
                    j += 1;
                }
                blank(&mut out, i, j);
                i = j;
            }
            b'r' if matches!(b.get(i + 1), Some(b'"' | b'#')) && starts_token(b, i) => {
                let hashes = b[i + 1..].iter().take_while(|c| **c == b'#').count();
                let open = i + 1 + hashes;
                if b.get(open) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let mut close = vec![b'"'];
                close.extend(std::iter::repeat_n(b'#', hashes));
                let end = b[open + 1..]
                    .windows(close.len())
                    .position(|w| w == close.as_slice())
                    .map_or(b.len(), |p| open + 1 + p + close.len());
                blank(
                    &mut out,
                    open + 1,
                    end.saturating_sub(close.len()).max(open + 1),
                );
                i = end;
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                blank(&mut out, i + 1, j.min(b.len()));
                i = j + 1;
            }
            b'\'' => {
                // A char literal ('x', '\n', '\u{1F}'), not a lifetime ('a).
                let end = if b.get(i + 1) == Some(&b'\\') {
                    b[i + 2..]
                        .iter()
                        .position(|c| *c == b'\'')
                        .map(|p| i + 2 + p)
                } else {
                    let len = source[i + 1..].chars().next().map_or(1, char::len_utf8);
                    (b.get(i + 1 + len) == Some(&b'\'')).then_some(i + 1 + len)
                };
                match end {
                    Some(e) => {
                        blank(&mut out, i + 1, e);
                        i = e + 1;
                    }
                    None => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// Whether the `r` at `i` starts a raw string (`r"`, `br"`), not an identifier's end (`for"`).
pub(crate) fn starts_token(b: &[u8], i: usize) -> bool {
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    match i {
        0 => true,
        _ if !ident(b[i - 1]) => true,
        _ => b[i - 1] == b'b' && (i < 2 || !ident(b[i - 2])),
    }
}

/// The index just past the item that starts at `from` (to its matching `}` or its `;`).
pub(crate) fn item_end(code: &[u8], from: usize) -> usize {
    let mut depth = 0usize;
    for (k, c) in code.iter().enumerate().skip(from) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return k + 1;
                }
            }
            b';' if depth == 0 => return k + 1,
            _ => {}
        }
    }
    code.len()
}

pub(crate) fn skip_ws(code: &[u8], mut i: usize) -> usize {
    while i < code.len() && code[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

pub(crate) fn ident_at(code: &[u8], i: usize) -> &str {
    let end = code[i..]
        .iter()
        .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
        .map_or(code.len(), |p| i + p);
    std::str::from_utf8(&code[i..end]).unwrap_or("")
}

/// Blanks `#[cfg(test)]` items; returns the names of `#[cfg(test)] mod x;` children (their
/// files are test-only).
pub(crate) fn blank_test_code(code: &mut [u8]) -> BTreeSet<String> {
    let mut test_children = BTreeSet::new();
    let marker = b"#[cfg(test)]";
    let mut i = 0;
    while let Some(p) = code[i..].windows(marker.len()).position(|w| w == marker) {
        let start = i + p;
        let mut j = skip_ws(code, start + marker.len());
        while code.get(j) == Some(&b'#') {
            j = skip_ws(code, item_end_attr(code, j));
        }
        let rest = std::str::from_utf8(&code[j..]).unwrap_or("");
        let after_vis = rest
            .strip_prefix("pub(crate) ")
            .or_else(|| rest.strip_prefix("pub(super) "))
            .or_else(|| rest.strip_prefix("pub "))
            .unwrap_or(rest);
        let end = item_end(code, j);
        if let Some(m) = after_vis.strip_prefix("mod ") {
            let name = ident_at(m.as_bytes(), 0).to_owned();
            if m[name.len()..].trim_start().starts_with(';') {
                test_children.insert(name);
            }
        }
        for c in &mut code[start..end] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
        i = end;
    }
    test_children
}

/// The index just past an attribute `#[...]` starting at `i`.
pub(crate) fn item_end_attr(code: &[u8], i: usize) -> usize {
    let mut depth = 0usize;
    for (k, c) in code.iter().enumerate().skip(i) {
        match c {
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    return k + 1;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// The first segments a path names: `crate::a::b` -> `[a]`, `crate::{a::x, b}` -> `[a, b]`.
pub(crate) fn first_segments(code: &[u8], at: usize) -> Vec<(String, usize)> {
    let i = skip_ws(code, at);
    if code.get(i) != Some(&b'{') {
        return vec![(ident_at(code, i).to_owned(), i)];
    }
    let end = item_end(code, i);
    let mut out = Vec::new();
    let (mut depth, mut expect) = (0usize, true);
    for k in i..end {
        match code[k] {
            b'{' => {
                depth += 1;
                expect = depth == 1;
            }
            b'}' => depth -= 1,
            b',' if depth == 1 => expect = true,
            c if expect && depth == 1 && (c.is_ascii_alphabetic() || c == b'_') => {
                out.push((ident_at(code, k).to_owned(), k));
                expect = false;
            }
            _ => {}
        }
    }
    out
}

pub(crate) fn line_of(code: &[u8], offset: usize) -> usize {
    code[..offset].iter().filter(|c| **c == b'\n').count() + 1
}

/// The line of `source` holding `offset`, trimmed, for the message.
pub(crate) fn snippet(source: &str, offset: usize) -> String {
    let start = source[..offset].rfind('\n').map_or(0, |p| p + 1);
    let end = source[offset..]
        .find('\n')
        .map_or(source.len(), |p| offset + p);
    source[start..end].trim().trim_end_matches(';').to_owned()
}

/// Every import of `source` (the file at `rel`, relative to `src`) that breaks the floors, plus
/// the names of its test-only child modules.
pub(crate) fn check_file(rel: &str, source: &str) -> (Vec<Violation>, BTreeSet<String>) {
    let module = module_path(rel);
    let Some(own) = floor_named(&module[0]) else {
        return (Vec::new(), BTreeSet::new()); // lib.rs
    };
    let mut code = strip(source);
    let test_children = blank_test_code(&mut code);
    let mut found = Vec::new();
    let mut judge = |target: &str, at: usize, how: &str| {
        let why = match floor_named(target) {
            None => format!(
                "{how} `{target}`, which is no floor (name the floor: crate::go/model/state/http/xds/assembly)"
            ),
            Some(t) if t.level > own.level => format!(
                "the {} floor (level {}) imports the {} floor above it (level {})",
                own.name, own.level, t.name, t.level
            ),
            Some(t) if t.level == own.level && t.name != own.name => format!(
                "the surfaces {} and {} never import each other",
                own.name, t.name
            ),
            Some(_) => return,
        };
        found.push(Violation {
            file: rel.to_owned(),
            line: line_of(&code, at),
            path: snippet(source, at),
            why,
        });
    };
    let is_ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < code.len() {
        let word_start = i == 0 || !(is_ident(code[i - 1]) || code[i - 1] == b'$');
        if word_start && code[i..].starts_with(b"crate") {
            let j = skip_ws(&code, i + 5);
            if code[j..].starts_with(b"::") {
                for (seg, at) in first_segments(&code, j + 2) {
                    judge(&seg, at, "names the crate root's");
                }
                i = j + 2;
                continue;
            }
        }
        if word_start && code[i..].starts_with(b"super") {
            let mut ups = 0;
            let mut j = i;
            while code[j..].starts_with(b"super") {
                let k = skip_ws(&code, j + 5);
                if !code[k..].starts_with(b"::") {
                    break;
                }
                ups += 1;
                j = skip_ws(&code, k + 2);
            }
            if ups > 0 {
                if ups >= module.len() {
                    // Climbs to the crate root: what follows names the floor.
                    for (seg, at) in first_segments(&code, j) {
                        judge(&seg, at, "climbs with super:: to the crate root's");
                    }
                }
                i = j;
                continue;
            }
        }
        i += 1;
    }
    (found, test_children)
}
