//! JSON bytes exactly as Consul's HTTP layer writes them with Go's `encoding/json`: `json.Marshal`
//! (compact) or, for `?pretty`, `json.MarshalIndent(obj, "", "    ")` plus a trailing newline;
//! both with Go's default HTML escaping (`<`, `>`, `&` as `\u003c`, `\u003e`, `\u0026`) and
//! U+2028/U+2029 as `\u2028`/`\u2029`. Object key order is the value's own (Go struct fields
//! keep declaration order; maps are built sorted where they are made).

use std::io;

use serde::Serialize;
use serde_json::Value;
use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter, Serializer};

/// `json.Marshal(v)`.
pub fn compact(v: &Value) -> Vec<u8> {
    encode(v, GoEscape(CompactFormatter))
}

/// `json.MarshalIndent(v, "", "    ")` followed by `"\n"`, as Consul's `marshalJSON` does.
pub fn pretty(v: &Value) -> Vec<u8> {
    let mut out = encode(v, GoEscape(PrettyFormatter::with_indent(b"    ")));
    out.push(b'\n');
    out
}

/// `json.Marshal(v)` of anything serializable (a struct, without building a `Value` first).
pub fn compact_of<T: Serialize + ?Sized>(v: &T) -> Vec<u8> {
    encode(v, GoEscape(CompactFormatter))
}

fn encode<T: Serialize + ?Sized, F: Formatter>(v: &T, f: F) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    let mut ser = Serializer::with_formatter(&mut out, f);
    // Serializing into a Vec cannot fail for our types (keys are strings, no I/O errors).
    if v.serialize(&mut ser).is_err() {
        out.clear();
    }
    out
}

/// Wraps a formatter and adds Go's extra string escapes.
struct GoEscape<F>(F);

/// Writes `fragment` with Go's HTML-safe escapes for the characters serde_json leaves as is.
fn write_go_fragment<W: ?Sized + io::Write>(w: &mut W, fragment: &str) -> io::Result<()> {
    let mut start = 0;
    for (i, c) in fragment.char_indices() {
        let esc: &[u8] = match c {
            '<' => b"\\u003c",
            '>' => b"\\u003e",
            '&' => b"\\u0026",
            '\u{2028}' => b"\\u2028",
            '\u{2029}' => b"\\u2029",
            _ => continue,
        };
        w.write_all(&fragment.as_bytes()[start..i])?;
        w.write_all(esc)?;
        start = i + c.len_utf8();
    }
    w.write_all(&fragment.as_bytes()[start..])
}

macro_rules! delegate {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            #[inline]
            fn $name<W: ?Sized + io::Write>(&mut self, w: &mut W $(, $arg: $ty)*) -> io::Result<()> {
                self.0.$name(w $(, $arg)*)
            }
        )*
    };
}

impl<F: Formatter> Formatter for GoEscape<F> {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        write_go_fragment(w, fragment)
    }

    delegate! {
        begin_array();
        end_array();
        begin_array_value(first: bool);
        end_array_value();
        begin_object();
        end_object();
        begin_object_key(first: bool);
        end_object_key();
        begin_object_value();
        end_object_value();
    }
}

#[cfg(test)]
mod tests;
