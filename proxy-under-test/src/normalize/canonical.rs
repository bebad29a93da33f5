//! RFC 3986 path canonicalization with the character rules of Envoy's snapshot of Chromium's
//! `CanonicalizePath` (Envoy's `PathUtil::canonicalPath`), so the reference proxy forwards and
//! authorizes exactly the path Envoy would: `.`/`..` segments (also written `%2e`) resolved
//! without climbing above the root, `\` read as `/`, %-escapes of unreserved characters
//! (letters, digits, `-._~`) decoded, other valid escapes kept as written, characters that may
//! not stand in a path (space, `"`, `<`, `>`, `^`, `` ` ``, `{`, `|`, `}`, controls, bytes
//! above 0x7f) %-escaped, and a NUL (raw or `%00`) making the whole path invalid.

use std::borrow::Cow;

/// Copied as is (whether seen escaped or not).
const PASS: u8 = 0;
/// Needs a look in the loop (dots, `\`, `%`, and everything escaped or invalid).
const SPECIAL: u8 = 1;
/// Must be %-escaped in the output.
const ESCAPE: u8 = 2 | SPECIAL;
/// Seen %-escaped, is decoded.
const UNESCAPE: u8 = 4;
/// Makes the path invalid.
const INVALID: u8 = 8 | SPECIAL;

/// The flags of every byte (Chromium's `kPathCharLookup`).
const FLAGS: [u8; 256] = {
    let mut t = [ESCAPE; 256];
    t[0] = INVALID;
    let mut c = 0x21;
    while c < 0x7f {
        t[c] = PASS;
        c += 1;
    }
    let mut c = b'0';
    while c <= b'9' {
        t[c as usize] = UNESCAPE;
        c += 1;
    }
    let mut c = b'A';
    while c <= b'Z' {
        t[c as usize] = UNESCAPE;
        t[(c + 32) as usize] = UNESCAPE;
        c += 1;
    }
    t[b'-' as usize] = UNESCAPE;
    t[b'_' as usize] = UNESCAPE;
    t[b'~' as usize] = UNESCAPE;
    t[b'.' as usize] = SPECIAL;
    let escaped = b" \"#%<>?\\^`{|}";
    let mut i = 0;
    while i < escaped.len() {
        t[escaped[i] as usize] = ESCAPE;
        i += 1;
    }
    t
};

/// The canonical form of `path` (no query), or `None` when Envoy would reject it.
pub(super) fn canonicalize(path: &str) -> Option<Cow<'_, str>> {
    let bytes = path.as_bytes();
    if !bytes.is_empty()
        && bytes[0] == b'/'
        && bytes.iter().all(|&b| FLAGS[b as usize] & SPECIAL == 0)
    {
        return Some(Cow::Borrowed(path));
    }
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len() + 1);
    if !matches!(bytes.first(), Some(b'/' | b'\\')) {
        out.push(b'/');
    }
    let ok = partial_path(bytes, &mut out);
    if !ok {
        return None;
    }
    // Every byte written is ASCII: escapes, decoded unreserved characters and copied ASCII.
    String::from_utf8(out).ok().map(Cow::Owned)
}

/// Chromium's `DoPartialPath` over the whole input; false when the path is invalid.
fn partial_path(spec: &[u8], out: &mut Vec<u8>) -> bool {
    let end = spec.len();
    // Where in `out` a `%` was copied that started no valid escape (for nested escapes).
    let mut last_invalid_percent: Option<usize> = None;
    let mut ok = true;
    let mut i = 0;
    while i < end {
        let ch = spec[i];
        let flags = FLAGS[ch as usize];
        if flags & SPECIAL == 0 {
            out.push(ch);
        } else if let Some(dot_len) = dot_at(spec, i) {
            if out.last() == Some(&b'/') {
                match after_dot(spec, i + dot_len) {
                    Dot::NotDirectory => {
                        out.push(b'.');
                        i += dot_len - 1;
                    }
                    Dot::Current(consumed) => i += dot_len + consumed - 1,
                    Dot::Up(consumed) => {
                        back_up_to_previous_slash(out);
                        i += dot_len + consumed - 1;
                    }
                }
            } else {
                out.push(b'.');
                i += dot_len - 1;
            }
        } else if ch == b'\\' {
            out.push(b'/');
        } else if ch == b'%' {
            match decode_escape(spec, i) {
                Some(value) => {
                    let vflags = FLAGS[value as usize];
                    if vflags & UNESCAPE != 0 {
                        out.push(value);
                        if let Some(p) = last_invalid_percent
                            && p + 3 >= out.len()
                        {
                            check_nested_escapes(spec, i + 3, p, out);
                        }
                    } else {
                        out.extend_from_slice(&spec[i..i + 3]);
                        if vflags & INVALID == INVALID {
                            ok = false;
                        }
                    }
                    i += 2;
                }
                None => {
                    last_invalid_percent = Some(out.len());
                    out.push(b'%');
                }
            }
        } else if flags == INVALID {
            push_escaped(out, ch);
            ok = false;
        } else {
            push_escaped(out, ch);
        }
        i += 1;
    }
    ok
}

/// The length of a dot at `i`: 1 for `.`, 3 for `%2e`/`%2E`.
fn dot_at(spec: &[u8], i: usize) -> Option<usize> {
    match spec.get(i..) {
        Some([b'.', ..]) => Some(1),
        Some([b'%', b'2', b'e' | b'E', ..]) => Some(3),
        _ => None,
    }
}

enum Dot {
    /// Part of a name.
    NotDirectory,
    /// `.`: skip it and this many more bytes.
    Current(usize),
    /// `..`: go up one segment and skip this many more bytes.
    Up(usize),
}

fn is_slash(b: u8) -> bool {
    b == b'/' || b == b'\\'
}

/// Chromium's `ClassifyAfterDot`.
fn after_dot(spec: &[u8], after: usize) -> Dot {
    if after == spec.len() {
        return Dot::Current(0);
    }
    if is_slash(spec[after]) {
        return Dot::Current(1);
    }
    if let Some(second) = dot_at(spec, after) {
        let next = after + second;
        if next == spec.len() {
            return Dot::Up(second);
        }
        if is_slash(spec[next]) {
            return Dot::Up(second + 1);
        }
    }
    Dot::NotDirectory
}

/// Chromium's `BackUpToPreviousSlash`: `out` ends with `/`; drop the last segment, never the
/// first slash.
fn back_up_to_previous_slash(out: &mut Vec<u8>) {
    let last = out.len() - 1;
    if last == 0 {
        return;
    }
    let mut i = last - 1;
    while out[i] != b'/' && i > 0 {
        i -= 1;
    }
    out.truncate(i + 1);
}

/// A valid `%XX` at `i`, decoded.
fn decode_escape(spec: &[u8], i: usize) -> Option<u8> {
    let hi = hex(*spec.get(i + 1)?)?;
    let lo = hex(*spec.get(i + 2)?)?;
    Some(hi << 4 | lo)
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

fn push_escaped(out: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]]);
}

/// Chromium's `CheckForNestedEscapes`: a decoded character just written within two bytes of an
/// earlier lone `%` must not make a valid escape with it (`%%30%30` must not become `%00`);
/// if it would, that `%` is written as `%25`.
fn check_nested_escapes(spec: &[u8], next: usize, percent: usize, out: &mut Vec<u8>) {
    let len = out.len();
    let last = out[len - 1];
    let append_next = percent + 2 == len;
    if append_next {
        match spec.get(next) {
            Some(&b) if b < 0x80 => out.push(b),
            _ => return,
        }
    }
    if decode_escape(out, percent).is_some() {
        if !append_next {
            out.push(out[percent + 1]);
        }
        out[percent + 1] = b'2';
        out[percent + 2] = b'5';
        out.push(last);
    } else if append_next {
        out.truncate(len);
    }
}
