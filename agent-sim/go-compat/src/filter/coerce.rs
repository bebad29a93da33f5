//! Go's `strconv` as go-bexpr uses it: coercing a raw value to a field's type (`ParseInt` and
//! `ParseUint` with base 0, `ParseBool`, `ParseFloat`), unquoting string literals, and `%q`
//! quoting for messages. Error texts are Go's (`strconv.ParseInt: parsing "x": invalid syntax`).

/// Why a number did not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NumErr {
    Syntax,
    Range,
}

impl NumErr {
    fn text(self) -> &'static str {
        match self {
            Self::Syntax => "invalid syntax",
            Self::Range => "value out of range",
        }
    }
}

fn num_error(func: &str, input: &str, e: NumErr) -> String {
    format!("strconv.{func}: parsing {}: {}", go_quote(input), e.text())
}

/// Go's `strconv.ParseInt(s, 0, 64)`.
pub(crate) fn parse_int(s: &str) -> Result<i64, String> {
    let (neg, unsigned) = match s.as_bytes().first() {
        None => return Err(num_error("ParseInt", s, NumErr::Syntax)),
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        Some(_) => (false, s),
    };
    let un = match uint_base0(unsigned) {
        Ok(u) => u,
        Err(NumErr::Syntax) => return Err(num_error("ParseInt", s, NumErr::Syntax)),
        Err(NumErr::Range) => u64::MAX,
    };
    const CUTOFF: u64 = 1 << 63;
    match (neg, un) {
        (false, u) if u >= CUTOFF => Err(num_error("ParseInt", s, NumErr::Range)),
        (true, u) if u > CUTOFF => Err(num_error("ParseInt", s, NumErr::Range)),
        (true, u) => Ok(0i64.wrapping_sub_unsigned(u)),
        (false, u) => Ok(u.cast_signed()),
    }
}

/// Go's `strconv.ParseUint(s, 0, 64)`.
pub(crate) fn parse_uint(s: &str) -> Result<u64, String> {
    uint_base0(s).map_err(|e| num_error("ParseUint", s, e))
}

/// Go's `strconv.ParseBool`.
pub(crate) fn parse_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(num_error("ParseBool", s, NumErr::Syntax)),
    }
}

/// Go's `strconv.ParseFloat(s, 64)`, approximated by Rust's parser (Go additionally accepts
/// hexadecimal mantissas and `_` separators; no field agent-sim filters on is a float).
pub(crate) fn parse_float(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .map_err(|_| num_error("ParseFloat", s, NumErr::Syntax))
}

/// The unsigned part of `ParseUint` with base 0: `0x`/`0o`/`0b` prefixes, a leading `0` for
/// octal, and `_` separators between digits.
fn uint_base0(s: &str) -> Result<u64, NumErr> {
    let bytes = s.as_bytes();
    if bytes.is_empty() {
        return Err(NumErr::Syntax);
    }
    let (base, digits): (u64, &[u8]) = if bytes[0] == b'0' {
        match bytes.get(1).map(u8::to_ascii_lowercase) {
            Some(b'b') if bytes.len() >= 3 => (2, &bytes[2..]),
            Some(b'o') if bytes.len() >= 3 => (8, &bytes[2..]),
            Some(b'x') if bytes.len() >= 3 => (16, &bytes[2..]),
            _ => (8, &bytes[1..]),
        }
    } else {
        (10, bytes)
    };
    let mut underscores = false;
    let mut n: u64 = 0;
    for &c in digits {
        let d = match c {
            b'_' => {
                underscores = true;
                continue;
            }
            b'0'..=b'9' => u64::from(c - b'0'),
            c if c.is_ascii_alphabetic() => u64::from(c.to_ascii_lowercase() - b'a') + 10,
            _ => return Err(NumErr::Syntax),
        };
        if d >= base {
            return Err(NumErr::Syntax);
        }
        n = n
            .checked_mul(base)
            .and_then(|m| m.checked_add(d))
            .ok_or(NumErr::Range)?;
    }
    if underscores && !underscore_ok(s) {
        return Err(NumErr::Syntax);
    }
    Ok(n)
}

/// Go's `underscoreOK`: every `_` sits between digits (a base prefix counts as a digit).
fn underscore_ok(s: &str) -> bool {
    let mut b = s.as_bytes();
    if let Some(b'+' | b'-') = b.first() {
        b = &b[1..];
    }
    let mut saw = b'^';
    let mut i = 0;
    let mut hex = false;
    if b.len() >= 2 && b[0] == b'0' && matches!(b[1].to_ascii_lowercase(), b'b' | b'o' | b'x') {
        i = 2;
        saw = b'0';
        hex = b[1].eq_ignore_ascii_case(&b'x');
    }
    for &c in &b[i..] {
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else if saw == b'_' {
            return false;
        } else {
            saw = b'!';
        }
    }
    saw != b'_'
}

/// Go's `strconv.Unquote` for the two literal forms the grammar admits: a backquoted raw string
/// (carriage returns dropped) or a double-quoted string with Go escapes. `None` is Go's
/// `invalid syntax`. Bytes from `\x`/octal escapes that do not form UTF-8 are replaced.
pub(crate) fn unquote(lit: &str) -> Option<String> {
    if let Some(raw) = lit.strip_prefix('`').and_then(|r| r.strip_suffix('`')) {
        return (!raw.contains('`')).then(|| raw.replace('\r', ""));
    }
    let inner = lit.strip_prefix('"')?.strip_suffix('"')?;
    if inner.contains('\n') || inner.contains('"') {
        return None;
    }
    if !inner.contains('\\') {
        return Some(inner.to_owned());
    }
    let mut out: Vec<u8> = Vec::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        match chars.next()? {
            'a' => out.push(0x07),
            'b' => out.push(0x08),
            'f' => out.push(0x0c),
            'n' => out.push(b'\n'),
            'r' => out.push(b'\r'),
            't' => out.push(b'\t'),
            'v' => out.push(0x0b),
            '\\' => out.push(b'\\'),
            'x' => out.push(u8::try_from(hex_digits(&mut chars, 2)?).ok()?),
            d @ '0'..='7' => {
                let mut v = d.to_digit(8)?;
                for _ in 0..2 {
                    v = v * 8 + chars.next()?.to_digit(8)?;
                }
                out.push(u8::try_from(v).ok()?);
            }
            'u' => push_char(&mut out, hex_digits(&mut chars, 4)?)?,
            'U' => push_char(&mut out, hex_digits(&mut chars, 8)?)?,
            _ => return None,
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// Reads exactly `n` hex digits.
fn hex_digits(chars: &mut std::str::Chars<'_>, n: usize) -> Option<u32> {
    let mut v: u32 = 0;
    for _ in 0..n {
        v = v.checked_mul(16)? + chars.next()?.to_digit(16)?;
    }
    Some(v)
}

/// Appends a `\u`/`\U` code point as UTF-8; `None` for a surrogate or out-of-range value.
fn push_char(out: &mut Vec<u8>, v: u32) -> Option<()> {
    let c = char::from_u32(v)?;
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    Some(())
}

pub(crate) use crate::gotext::go_quote;
