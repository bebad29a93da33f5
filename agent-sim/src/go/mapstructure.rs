//! The slice of Go's `mapstructure` that `PUT /v1/config` depends on: schema-driven decoding of a
//! JSON object into canonical JSON, with weak typing (`"15"` -> 15, `1` -> `"1"`, durations as
//! `"15s"`, one-element arrays unwrapped, a lone value lifted into a slice), case-insensitive and
//! snake_case keys, the unused-key list and mapstructure's error texts.

mod scalar;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

pub(crate) use scalar::go_v;
use scalar::{go_kind, to_bool, to_duration, to_float, to_int, to_string};

/// A Go field type, as far as decoding cares.
#[derive(Debug)]
pub(crate) enum Ty {
    Str,
    Bool,
    /// Signed integer; the Go type name (`int`, `int64`) for error texts.
    Int(&'static str),
    /// Unsigned integer with its Go type name (`uint32`, `uint64`).
    Uint(&'static str),
    /// `float32`.
    Float,
    /// `time.Duration`: decoded to integer nanoseconds.
    Duration,
    Struct(&'static Schema),
    Slice(&'static Self),
    /// `map[string]T` (keys are user data).
    Map(&'static Self),
    /// `map[string]interface{}`: user data, kept as is (keys sorted like Go's encoder).
    OpaqueMap,
    /// `interface{}` or `*time.Time`: kept as is.
    Opaque,
}

/// A Go struct: its fields in declaration order.
#[derive(Debug)]
pub(crate) struct Schema {
    pub(crate) fields: &'static [Field],
}

/// One struct field: canonical (Go) name and type.
#[derive(Debug)]
pub(crate) struct Field(pub(crate) &'static str, pub(crate) Ty);

/// Decodes a top-level object against `schema`. On success returns the canonical object and the
/// unused keys (full paths like `Sources[0].Foo`, sorted); on failure mapstructure's error text.
pub(crate) fn decode_top(
    data: &Map<String, Value>,
    schema: &Schema,
) -> Result<(Value, Vec<String>), String> {
    let mut st = State::default();
    let out = decode_struct_map("", data, schema, &mut st);
    if !st.errors.is_empty() {
        let mut points: Vec<String> = st.errors.iter().map(|e| format!("* {e}")).collect();
        points.sort();
        return Err(format!(
            "{} error(s) decoding:\n\n{}",
            points.len(),
            points.join("\n")
        ));
    }
    st.unused.sort();
    Ok((Value::Object(out), st.unused))
}

#[derive(Default)]
struct State {
    errors: Vec<String>,
    unused: Vec<String>,
}

fn join(name: &str, field: &str) -> String {
    if name.is_empty() {
        field.to_owned()
    } else {
        format!("{name}.{field}")
    }
}

fn fold(s: &str) -> String {
    s.chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

fn decode_struct_map(
    name: &str,
    data: &Map<String, Value>,
    schema: &Schema,
    st: &mut State,
) -> Map<String, Value> {
    let mut used = vec![false; data.len()];
    let keys: Vec<&String> = data.keys().collect();
    let mut out = Map::new();
    for Field(fname, ty) in schema.fields {
        // Exact name first, then Go's EqualFold (plus the snake_case alias tags, which fold to
        // the same spelling once underscores are dropped).
        let idx = keys.iter().position(|k| k.as_str() == *fname).or_else(|| {
            let want = fold(fname);
            keys.iter()
                .enumerate()
                .position(|(i, k)| !used[i] && fold(k) == want)
        });
        let Some(i) = idx else { continue };
        used[i] = true;
        let path = join(name, fname);
        if let Some(v) = decode(&path, data[keys[i].as_str()].clone(), ty, st) {
            out.insert((*fname).to_owned(), v);
        }
    }
    for (i, k) in keys.iter().enumerate() {
        if !used[i] {
            st.unused.push(join(name, k));
        }
    }
    out
}

/// Decodes one value; `None` means "leave the zero value" (null input, or an error was recorded).
fn decode(name: &str, data: Value, ty: &Ty, st: &mut State) -> Option<Value> {
    if data.is_null() {
        return None;
    }
    // decode.HookWeakDecodeFromSlice: a one-element array meant for a non-slice is unwrapped.
    let data = match (ty, data) {
        (Ty::Slice(_), d) => d,
        (_, Value::Array(mut a)) if a.len() == 1 => a.pop().unwrap_or(Value::Null),
        (_, d) => d,
    };
    let res = match ty {
        Ty::Str => to_string(name, &data),
        Ty::Bool => to_bool(name, &data),
        Ty::Int(go) => to_int(name, &data, go, true),
        Ty::Uint(go) => to_int(name, &data, go, false),
        Ty::Float => to_float(name, &data),
        Ty::Duration => to_duration(name, &data),
        Ty::Struct(schema) => match data {
            Value::Object(m) => Ok(Value::Object(decode_struct_map(name, &m, schema, st))),
            // Weak typing lets an empty array stand for an empty map.
            Value::Array(a) if a.is_empty() => Ok(Value::Object(Map::new())),
            other => Err(format!(
                "'{name}' expected a map, got '{}'",
                go_kind(&other)
            )),
        },
        Ty::Slice(elem) => {
            let items = match data {
                Value::Array(a) => a,
                // Weak typing: an empty map is an empty slice, anything else is lifted.
                Value::Object(m) if m.is_empty() => Vec::new(),
                other => vec![other],
            };
            let out = items
                .into_iter()
                .enumerate()
                .map(|(i, v)| {
                    decode(&format!("{name}[{i}]"), v, elem, st).unwrap_or_else(|| zero(elem))
                })
                .collect();
            Ok(Value::Array(out))
        }
        Ty::Map(elem) => map_entries(name, data).map(|m| {
            // A null element still creates the key, with the zero value.
            let out = m
                .into_iter()
                .map(|(k, v)| {
                    let v =
                        decode(&format!("{name}[{k}]"), v, elem, st).unwrap_or_else(|| zero(elem));
                    (k, v)
                })
                .collect();
            Value::Object(out)
        }),
        Ty::OpaqueMap => map_entries(name, data).map(|m| {
            // Each element is decoded into an interface{}, so the slice hook unwraps
            // one-element arrays there too.
            let out = m
                .into_iter()
                .map(|(k, v)| match v {
                    Value::Array(mut a) if a.len() == 1 => {
                        (k, sort_keys(a.pop().unwrap_or(Value::Null)))
                    }
                    v => (k, sort_keys(v)),
                })
                .collect();
            Value::Object(sort_map(out))
        }),
        Ty::Opaque => Ok(sort_keys(data)),
    };
    match res {
        Ok(v) => Some(v),
        Err(e) => {
            st.errors.push(e);
            None
        }
    }
}

fn map_entries(name: &str, data: Value) -> Result<Map<String, Value>, String> {
    match data {
        Value::Object(m) => Ok(m),
        // Weak typing: a slice of maps is merged into one map.
        Value::Array(items) if items.iter().all(Value::is_object) => {
            let mut out = Map::new();
            for item in items {
                if let Value::Object(m) = item {
                    out.extend(m);
                }
            }
            Ok(out)
        }
        other => Err(format!(
            "'{name}' expected a map, got '{}'",
            go_kind(&other)
        )),
    }
}

/// The zero value a slice element gets when its input was null or failed.
fn zero(ty: &Ty) -> Value {
    match ty {
        Ty::Str => Value::String(String::new()),
        Ty::Bool => Value::Bool(false),
        Ty::Int(_) | Ty::Uint(_) | Ty::Duration => Value::from(0),
        Ty::Float => Value::from(0.0),
        Ty::Struct(_) | Ty::Map(_) | Ty::OpaqueMap => Value::Object(Map::new()),
        Ty::Slice(_) => Value::Array(Vec::new()),
        Ty::Opaque => Value::Null,
    }
}

/// Recursively sorts object keys, as Go's encoder writes maps.
pub(crate) fn sort_keys(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(sort_map(
            m.into_iter().map(|(k, v)| (k, sort_keys(v))).collect(),
        )),
        Value::Array(a) => Value::Array(a.into_iter().map(sort_keys).collect()),
        other => other,
    }
}

fn sort_map(m: Map<String, Value>) -> Map<String, Value> {
    let mut entries: Vec<(String, Value)> = m.into_iter().collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries.into_iter().collect()
}
