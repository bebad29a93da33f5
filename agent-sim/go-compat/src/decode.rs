//! Decoding request bodies the way Consul's Go code does: keys match field names
//! case-insensitively, snake_case aliases (`destination_service_name`) are accepted, unknown keys
//! are rejected, and errors read like Go's `encoding/json` (`json: unknown field "Foo"`, `EOF`).
//!
//! The trick: rewrite every object key to its canonical (Go field) spelling first, leaving the
//! contents of opaque user maps (`Meta`, `Config`) alone, then hand the value to serde structs that
//! use `deny_unknown_fields`, and translate serde's error into Go's words.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Which keys a body may contain, and which fields hold user-defined maps.
#[derive(Debug, Clone, Copy)]
pub struct KeySchema {
    /// Every canonical field name of every struct reachable from the body's top level.
    pub canonical: &'static [&'static str],
    /// Fields whose whole value is user data: neither its keys nor anything below is rewritten.
    pub opaque: &'static [&'static str],
    /// Fields that are maps with user-chosen keys but structured values (`Subsets`, `Failover`,
    /// `TaggedAddresses`): keys are kept, values are rewritten.
    pub keyed: &'static [&'static str],
}

/// A body that could not be decoded. The text is Go's (`json: unknown field "Foo"`), without the
/// endpoint's prefix (`Request decode failed: `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DecodeError(pub String);

/// Parses raw bytes as JSON with Go's error texts, then decodes like [`decode_value`].
pub fn decode_body<T: DeserializeOwned>(body: &[u8], schema: &KeySchema) -> Result<T, DecodeError> {
    decode_value(parse_json(body)?, schema)
}

/// Parses raw bytes as JSON, with Go's texts for the common failures.
pub fn parse_json(body: &[u8]) -> Result<Value, DecodeError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(DecodeError("EOF".into()));
    }
    serde_json::from_slice(body).map_err(|e| DecodeError(go_syntax_error(body, &e)))
}

/// Rewrites keys to canonical spelling, then deserializes, translating errors to Go's texts.
pub fn decode_value<T: DeserializeOwned>(
    value: Value,
    schema: &KeySchema,
) -> Result<T, DecodeError> {
    let value = normalize_keys(value, schema);
    serde_path_to_error::deserialize::<_, T>(value).map_err(|e| {
        let path = e.path().to_string();
        DecodeError(go_data_error(&path, &e.into_inner().to_string()))
    })
}

/// Rewrites every object key that matches a canonical name (ignoring case and underscores).
pub fn normalize_keys(value: Value, schema: &KeySchema) -> Value {
    match value {
        Value::Object(map) => Value::Object(normalize_object(map, schema)),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|v| normalize_keys(v, schema))
                .collect(),
        ),
        other => other,
    }
}

fn normalize_object(map: Map<String, Value>, schema: &KeySchema) -> Map<String, Value> {
    let mut out = Map::new();
    for (key, value) in map {
        let canon = canonical_name(&key, schema.canonical);
        let name = canon.map_or(key, str::to_owned);
        let value = match canon {
            Some(c) if schema.opaque.contains(&c) => value,
            Some(c) if schema.keyed.contains(&c) => match value {
                Value::Object(m) => Value::Object(
                    m.into_iter()
                        .map(|(k, v)| (k, normalize_keys(v, schema)))
                        .collect(),
                ),
                other => other,
            },
            _ => normalize_keys(value, schema),
        };
        // Go keeps the last duplicate; so does this.
        out.insert(name, value);
    }
    out
}

/// The canonical spelling of `key`, if any: exact match first, then case- and underscore-blind.
pub fn canonical_name(key: &str, canonical: &[&'static str]) -> Option<&'static str> {
    if let Some(exact) = canonical.iter().find(|c| **c == key) {
        return Some(exact);
    }
    let folded = fold(key);
    canonical.iter().find(|c| fold(c) == folded).copied()
}

fn fold(s: &str) -> String {
    s.chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

fn go_syntax_error(body: &[u8], e: &serde_json::Error) -> String {
    if e.is_eof() {
        return "unexpected EOF".into();
    }
    // serde reports 1-based line/column of the offending character; find it to echo it as Go does.
    let offending = offending_char(body, e.line(), e.column());
    match offending {
        Some(c) => format!("invalid character '{c}' looking for beginning of value"),
        None => format!("invalid JSON: {e}"),
    }
}

fn offending_char(body: &[u8], line: usize, column: usize) -> Option<char> {
    let text = String::from_utf8_lossy(body);
    let l = text.lines().nth(line.checked_sub(1)?)?;
    l.chars().nth(column.saturating_sub(1))
}

fn go_data_error(path: &str, serde_msg: &str) -> String {
    if let Some(rest) = serde_msg.strip_prefix("unknown field `") {
        let name = rest.split('`').next().unwrap_or_default();
        return format!("json: unknown field \"{name}\"");
    }
    if let Some(rest) = serde_msg.strip_prefix("invalid type: ") {
        // "string \"x\", expected u16"
        let (got, expected) = rest.split_once(", expected ").unwrap_or((rest, "value"));
        let got_kind = got.split_whitespace().next().unwrap_or(got);
        let go_got = match got_kind {
            "integer" | "floating" => "number",
            "boolean" => "bool",
            "sequence" => "array",
            "map" => "object",
            "unit" | "null" => "null",
            other => other,
        };
        let go_type = go_type_name(expected);
        return format!(
            "json: cannot unmarshal {go_got} into Go struct field {path} of type {go_type}"
        );
    }
    if let Some(rest) = serde_msg.strip_prefix("invalid value: ") {
        return format!("json: cannot unmarshal {rest} into Go struct field {path}");
    }
    if serde_msg.starts_with("missing field") {
        // Go fills missing fields with zero values; our structs default them, so this is a bug guard.
        return format!("json: {serde_msg}");
    }
    format!("json: {serde_msg} (at {path})")
}

fn go_type_name(serde_expected: &str) -> &'static str {
    match serde_expected {
        s if s.starts_with('u') || s.starts_with('i') => "int",
        s if s.starts_with('f') => "float64",
        "a boolean" => "bool",
        "a string" => "string",
        s if s.contains("sequence") => "[]interface {}",
        s if s.contains("map") => "map[string]interface {}",
        _ => "value",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        #[serde(rename = "LocalBindPort", default)]
        local_bind_port: u16,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Outer {
        #[serde(rename = "DestinationServiceName", default)]
        dest: String,
        #[serde(rename = "Meta", default)]
        meta: Map<String, Value>,
        #[serde(rename = "Upstreams", default)]
        ups: Vec<Inner>,
    }

    const SCHEMA: KeySchema = KeySchema {
        canonical: &[
            "DestinationServiceName",
            "Meta",
            "Upstreams",
            "LocalBindPort",
        ],
        opaque: &["Meta"],
        keyed: &[],
    };

    #[test]
    fn accepts_any_case_and_snake_case() {
        let body = br#"{"destination_service_name":"db","meta":{"some_Key":"v"},"UPSTREAMS":[{"localbindport":9}]}"#;
        let got: Outer = decode_body(body, &SCHEMA).unwrap();
        assert_eq!(got.dest, "db");
        assert!(
            got.meta.contains_key("some_Key"),
            "opaque map keys are kept verbatim"
        );
        assert_eq!(got.ups[0].local_bind_port, 9);
    }

    #[test]
    fn go_error_texts() {
        let unknown = decode_body::<Outer>(br#"{"Foo":1}"#, &SCHEMA).unwrap_err();
        assert_eq!(unknown.0, r#"json: unknown field "Foo""#);
        assert_eq!(decode_body::<Outer>(b"", &SCHEMA).unwrap_err().0, "EOF");
        assert_eq!(decode_body::<Outer>(b"  \n", &SCHEMA).unwrap_err().0, "EOF");
        assert_eq!(
            decode_body::<Outer>(b"{\"a\":", &SCHEMA).unwrap_err().0,
            "unexpected EOF"
        );
        let syntax = decode_body::<Outer>(b"xyz", &SCHEMA).unwrap_err();
        assert_eq!(
            syntax.0,
            "invalid character 'x' looking for beginning of value"
        );
        let wrong =
            decode_body::<Outer>(br#"{"Upstreams":[{"LocalBindPort":"x"}]}"#, &SCHEMA).unwrap_err();
        assert!(
            wrong
                .0
                .starts_with("json: cannot unmarshal string into Go struct field"),
            "{}",
            wrong.0
        );
        assert!(wrong.0.contains("LocalBindPort"), "{}", wrong.0);
    }
}
