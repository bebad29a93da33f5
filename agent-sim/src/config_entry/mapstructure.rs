//! The slice of Go's `mapstructure` that `PUT /v1/config` depends on: schema-driven decoding of a
//! JSON object into canonical JSON, with weak typing (`"15"` -> 15, `1` -> `"1"`, durations as
//! `"15s"`, one-element arrays unwrapped, a lone value lifted into a slice), case-insensitive and
//! snake_case keys, the unused-key list and mapstructure's error texts.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::duration::GoDuration;

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
            let out = m
                .into_iter()
                .filter_map(|(k, v)| decode(&format!("{name}[{k}]"), v, elem, st).map(|v| (k, v)))
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

fn unconvertible(name: &str, go_type: &str, data: &Value) -> String {
    format!(
        "'{name}' expected type '{go_type}', got unconvertible type '{}', value: '{}'",
        go_type_of(data),
        go_v(data)
    )
}

fn to_string(name: &str, data: &Value) -> Result<Value, String> {
    match data {
        Value::String(s) => Ok(Value::String(s.clone())),
        Value::Bool(b) => Ok(Value::String(if *b { "1" } else { "0" }.into())),
        Value::Number(n) => Ok(Value::String(format_float_f(
            n.as_f64().unwrap_or_default(),
        ))),
        other => Err(unconvertible(name, "string", other)),
    }
}

fn to_bool(name: &str, data: &Value) -> Result<Value, String> {
    match data {
        Value::Bool(b) => Ok(Value::Bool(*b)),
        Value::Number(n) => Ok(Value::Bool(n.as_f64().unwrap_or_default() != 0.0)),
        Value::String(s) => match s.as_str() {
            "" => Ok(Value::Bool(false)),
            "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(Value::Bool(true)),
            "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(Value::Bool(false)),
            _ => Err(format!(
                "cannot parse '{name}' as bool: strconv.ParseBool: parsing {}: invalid syntax",
                super::go_quote(s)
            )),
        },
        other => Err(unconvertible(name, "bool", other)),
    }
}

fn to_int(name: &str, data: &Value, go: &str, signed: bool) -> Result<Value, String> {
    let bits: u32 = match go {
        "int8" | "uint8" => 8,
        "int16" | "uint16" => 16,
        "int32" | "uint32" => 32,
        _ => 64,
    };
    let (min, max): (i128, i128) = if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    let v: i128 = match data {
        // JSON numbers arrive as float64; Go truncates them.
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
            .unwrap_or_else(|| n.as_f64().unwrap_or_default() as i128),
        Value::Bool(b) => i128::from(*b),
        Value::String(s) => {
            let (func, kind) = if signed {
                ("ParseInt", "int")
            } else {
                ("ParseUint", "uint")
            };
            let parsed = parse_go_int(if s.is_empty() { "0" } else { s }, signed);
            match parsed {
                Some(v) if (min..=max).contains(&v) => v,
                Some(_) => {
                    return Err(format!(
                        "cannot parse '{name}' as {kind}: strconv.{func}: parsing {}: value out of range",
                        super::go_quote(s)
                    ));
                }
                None => {
                    return Err(format!(
                        "cannot parse '{name}' as {kind}: strconv.{func}: parsing {}: invalid syntax",
                        super::go_quote(s)
                    ));
                }
            }
        }
        other => return Err(unconvertible(name, go, other)),
    };
    if !(min..=max).contains(&v) {
        return Err(format!(
            "cannot parse '{name}', {} overflows {go}",
            go_v(data)
        ));
    }
    Ok(if signed {
        Value::from(v as i64)
    } else {
        Value::from(v as u64)
    })
}

/// Go's `strconv.ParseInt(s, 0, 64)` syntax: optional sign, `0x`/`0o`/`0b`/leading-0 prefixes,
/// underscores only with a prefix.
fn parse_go_int(s: &str, signed: bool) -> Option<i128> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') if signed => (true, &s[1..]),
        Some(b'+') if signed => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d.replace('_', ""))
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d.replace('_', ""))
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d.replace('_', ""))
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, lower[1..].replace('_', ""))
    } else {
        if lower.contains('_') {
            return None;
        }
        (10, lower)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let v = i128::from_str_radix(&digits, radix).ok()?;
    Some(if neg { -v } else { v })
}

fn to_float(name: &str, data: &Value) -> Result<Value, String> {
    match data {
        Value::Number(n) => Ok(Value::from(n.as_f64().unwrap_or_default())),
        Value::Bool(b) => Ok(Value::from(if *b { 1.0 } else { 0.0 })),
        Value::String(s) if s.is_empty() => Ok(Value::from(0.0)),
        Value::String(s) => s.parse::<f64>().map(Value::from).map_err(|_| {
            format!(
                "cannot parse '{name}' as float: strconv.ParseFloat: parsing {}: invalid syntax",
                super::go_quote(s)
            )
        }),
        other => Err(unconvertible(name, "float32", other)),
    }
}

fn to_duration(name: &str, data: &Value) -> Result<Value, String> {
    match data {
        // mapstructure.StringToTimeDurationHookFunc
        Value::String(s) => GoDuration::parse(s)
            .map(|d| Value::from(d.0))
            .map_err(|e| format!("error decoding '{name}': {e}")),
        other => to_int(name, other, "time.Duration", true),
    }
}

/// reflect.Kind names, as `'%s' expected a map, got '%s'` prints them.
fn go_kind(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Number(_) => "float64",
        Value::Bool(_) => "bool",
        Value::Array(_) => "slice",
        Value::Object(_) => "map",
        Value::Null => "invalid",
    }
}

/// Go type names of JSON-decoded values (`%T`).
fn go_type_of(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Number(_) => "float64",
        Value::Bool(_) => "bool",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
        Value::Null => "<nil>",
    }
}

/// Go's `%v` of a JSON-decoded value.
pub(crate) fn go_v(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => format_float_g(n.as_f64().unwrap_or_default()),
        Value::Bool(b) => b.to_string(),
        Value::Null => "<nil>".into(),
        Value::Array(a) => format!("[{}]", a.iter().map(go_v).collect::<Vec<_>>().join(" ")),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let mut out = String::from("map[");
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                let _ = write!(out, "{k}:{}", go_v(&m[k.as_str()]));
            }
            out.push(']');
            out
        }
    }
}

/// `strconv.FormatFloat(f, 'f', -1, 64)`.
fn format_float_f(f: f64) -> String {
    format!("{f}")
}

/// `%v` of a float64 (`%g` with the shortest representation, exponent outside [1e-4, 1e21)).
fn format_float_g(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-4..1e21).contains(&abs) {
        let s = format!("{f:e}");
        let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let (sign, digits) = exp.strip_prefix('-').map_or(("+", exp), |d| ("-", d));
        format!("{mant}e{sign}{digits:0>2}")
    } else {
        format!("{f}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    static INNER: Schema = Schema {
        fields: &[Field("Mode", Ty::Str)],
    };
    static INNER_TY: Ty = Ty::Struct(&INNER);
    static TOP: Schema = Schema {
        fields: &[
            Field("Name", Ty::Str),
            Field("Port", Ty::Int("int")),
            Field("Weight", Ty::Float),
            Field("Enabled", Ty::Bool),
            Field("Timeout", Ty::Duration),
            Field("MeshGateway", Ty::Struct(&INNER)),
            Field("Items", Ty::Slice(&INNER_TY)),
            Field("Tags", Ty::Slice(&Ty::Str)),
            Field("Meta", Ty::Map(&Ty::Str)),
            Field("Config", Ty::OpaqueMap),
        ],
    };

    fn run(v: Value) -> Result<(Value, Vec<String>), String> {
        let Value::Object(m) = v else {
            panic!("object")
        };
        decode_top(&m, &TOP)
    }

    #[test]
    fn weak_typing_and_key_spellings() {
        let (out, unused) = run(json!({
            "name": 5, "PORT": "0x10", "weight": "12.5", "enabled": "true", "timeout": "1m",
            "mesh_gateway": [{"mode": "local"}], "items": {"Mode": "x"}, "tags": "solo",
            "Meta": {"k": 1}, "Config": {"b": [1], "a": {"z": 1, "y": 2}}, "Extra": 1
        }))
        .unwrap();
        assert_eq!(
            out,
            json!({"Name":"5","Port":16,"Weight":12.5,"Enabled":true,"Timeout":60_000_000_000i64,
                   "MeshGateway":{"Mode":"local"},"Items":[{"Mode":"x"}],"Tags":["solo"],
                   "Meta":{"k":"1"},"Config":{"a":{"y":2,"z":1},"b":1}})
        );
        assert_eq!(unused, vec!["Extra".to_owned()]);
        let keys: Vec<&String> = out["Config"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["a", "b"], "opaque maps are key-sorted");
    }

    #[test]
    fn nested_unused_keys_have_paths() {
        let (_, unused) =
            run(json!({"Items": [{"Mode": "a"}, {"Bogus": 1}], "MeshGateway": {"X": 1}})).unwrap();
        assert_eq!(
            unused,
            vec!["Items[1].Bogus".to_owned(), "MeshGateway.X".to_owned()]
        );
    }

    #[test]
    fn errors_in_mapstructure_words() {
        let err = run(json!({"Port": "abc", "Enabled": "maybe", "Name": {"a": 1}, "Timeout": "5"}))
            .unwrap_err();
        assert_eq!(
            err,
            "4 error(s) decoding:\n\n\
             * 'Name' expected type 'string', got unconvertible type 'map[string]interface {}', value: 'map[a:1]'\n\
             * cannot parse 'Enabled' as bool: strconv.ParseBool: parsing \"maybe\": invalid syntax\n\
             * cannot parse 'Port' as int: strconv.ParseInt: parsing \"abc\": invalid syntax\n\
             * error decoding 'Timeout': time: invalid duration \"5\""
        );
        let err = run(json!({"MeshGateway": "local"})).unwrap_err();
        assert_eq!(
            err,
            "1 error(s) decoding:\n\n* 'MeshGateway' expected a map, got 'string'"
        );
    }

    #[test]
    fn go_value_formatting() {
        assert_eq!(go_v(&json!(1e21)), "1e+21");
        assert_eq!(go_v(&json!(0.00001)), "1e-05");
        assert_eq!(go_v(&json!(1.5)), "1.5");
        assert_eq!(go_v(&json!(["a", 2, true])), "[a 2 true]");
    }
}
