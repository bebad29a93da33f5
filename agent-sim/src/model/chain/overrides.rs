//! The POST body of `/v1/discovery-chain/:service`, decoded as Consul does: Go's JSON decoder
//! into a map, then mapstructure (weakly typed, keys matched case-insensitively, snake_case
//! aliases, one-element arrays unwrapped, durations from strings, unknown keys ignored), with
//! mapstructure's aggregated error text and the endpoint's 400 messages.

use serde_json::{Map, Value};

use super::ChainError;
use super::gofmt::{go_duration_error, go_fmt_v, go_kind_name, go_type_name};
use crate::go::decode::parse_json;
use crate::go::duration::GoDuration;

/// The overrides a POST asks for; `None` means "not overridden".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChainOverrides {
    /// `OverrideProtocol`, used as given (Consul neither lowercases nor validates it).
    pub protocol: Option<String>,
    /// `OverrideConnectTimeout`; only positive values take effect when compiling.
    pub connect_timeout: Option<GoDuration>,
    /// `OverrideMeshGateway.Mode`: `none`, `local` or `remote`.
    pub mesh_gateway_mode: Option<String>,
}

const PROTOCOL: (&str, &str) = ("OverrideProtocol", "override_protocol");
const TIMEOUT: (&str, &str) = ("OverrideConnectTimeout", "override_connect_timeout");
const MESH_GATEWAY: (&str, &str) = ("OverrideMeshGateway", "override_mesh_gateway");

fn bad(reason: &str) -> ChainError {
    ChainError::BadRequest(format!("Request decoding failed: {reason}"))
}

/// Decodes the POST body; see the module docs. Errors are the endpoint's 400 texts.
pub fn decode_overrides(body: &[u8]) -> Result<ChainOverrides, ChainError> {
    let raw = match first_json_value(body)? {
        Value::Null => return Ok(ChainOverrides::default()),
        Value::Object(map) => map,
        other => {
            return Err(bad(&format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                json_kind(&other)
            )));
        }
    };
    let mut errors = Vec::new();
    let mut out = ChainOverrides::default();

    if let Some(value) = field(&raw, MESH_GATEWAY).map(unwrap_single) {
        match value {
            Value::Null => {}
            Value::Object(gateway) => {
                let mode = gateway_mode(gateway);
                if let Some(v) = mode.map(unwrap_single) {
                    let name = format!("{}.Mode", MESH_GATEWAY.0);
                    match weak_string(&name, v) {
                        Ok(mode) => out.mesh_gateway_mode = mode,
                        Err(e) => errors.push(e),
                    }
                }
            }
            other => errors.push(format!(
                "'{}' expected a map, got '{}'",
                MESH_GATEWAY.0,
                go_kind_name(other)
            )),
        }
    }
    if let Some(value) = field(&raw, PROTOCOL).map(unwrap_single) {
        match weak_string(PROTOCOL.0, value) {
            Ok(protocol) => out.protocol = protocol,
            Err(e) => errors.push(e),
        }
    }
    if let Some(value) = field(&raw, TIMEOUT).map(unwrap_single) {
        match weak_duration(TIMEOUT.0, value) {
            Ok(timeout) => out.connect_timeout = timeout,
            Err(e) => errors.push(e),
        }
    }

    if !errors.is_empty() {
        let mut points: Vec<String> = errors.iter().map(|e| format!("* {e}")).collect();
        points.sort();
        return Err(bad(&format!(
            "{} error(s) decoding:\n\n{}",
            errors.len(),
            points.join("\n")
        )));
    }
    out.protocol = out.protocol.filter(|p| !p.is_empty());
    out.connect_timeout = out.connect_timeout.filter(|d| d.0 != 0);
    out.mesh_gateway_mode = out.mesh_gateway_mode.filter(|m| !m.is_empty());
    if let Some(mode) = &out.mesh_gateway_mode
        && !matches!(mode.as_str(), "none" | "local" | "remote")
    {
        return Err(ChainError::BadRequest(
            "Invalid OverrideMeshGateway.Mode parameter".to_owned(),
        ));
    }
    Ok(out)
}

/// Go's `json.Decoder.Decode`: the first JSON value of the body; anything after it is ignored.
fn first_json_value(body: &[u8]) -> Result<Value, ChainError> {
    let mut stream = serde_json::Deserializer::from_slice(body).into_iter::<Value>();
    match stream.next() {
        Some(Ok(value)) => Ok(value),
        None => Err(bad("EOF")),
        Some(Err(e)) => Err(bad(&match parse_json(body) {
            Err(go) => go.0,
            Ok(_) => e.to_string(),
        })),
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
    }
}

/// A field by Go name: the exact name, else its snake_case alias (`HookTranslateKeys`), else any
/// key equal ignoring case (mapstructure's fallback; Go's pick among several is random, this one
/// takes the first in sorted order).
fn field<'a>(raw: &'a Map<String, Value>, (name, alias): (&str, &str)) -> Option<&'a Value> {
    if let Some(v) = raw.get(name) {
        return Some(v);
    }
    let lower = name.to_lowercase();
    if let Some(v) = raw.get(&lower) {
        return Some(v);
    }
    let mut keys: Vec<&String> = raw.keys().collect();
    keys.sort();
    let by_alias = keys.iter().find(|k| k.eq_ignore_ascii_case(alias));
    by_alias
        .or_else(|| keys.iter().find(|k| k.eq_ignore_ascii_case(name)))
        .and_then(|k| raw.get(k.as_str()))
}

fn gateway_mode(gateway: &Map<String, Value>) -> Option<&Value> {
    gateway.get("Mode").or_else(|| {
        let mut keys: Vec<&String> = gateway.keys().collect();
        keys.sort();
        let key = keys.into_iter().find(|k| k.eq_ignore_ascii_case("mode"))?;
        gateway.get(key)
    })
}

/// `HookWeakDecodeFromSlice`: a one-element array stands for its element (one level only).
fn unwrap_single(v: &Value) -> &Value {
    match v {
        Value::Array(items) if items.len() == 1 => &items[0],
        other => other,
    }
}

fn unconvertible(name: &str, want: &str, v: &Value) -> String {
    format!(
        "'{name}' expected type '{want}', got unconvertible type '{}', value: '{}'",
        go_type_name(v),
        go_fmt_v(v)
    )
}

/// mapstructure's weakly typed string: bools are `1`/`0`, numbers their shortest decimal.
fn weak_string(name: &str, v: &Value) -> Result<Option<String>, String> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        Value::Bool(b) => Ok(Some(if *b { "1" } else { "0" }.to_owned())),
        Value::Number(n) => Ok(Some(n.as_f64().unwrap_or(0.0).to_string())),
        other => Err(unconvertible(name, "string", other)),
    }
}

/// A `time.Duration` field: strings through `time.ParseDuration`, numbers as nanoseconds.
fn weak_duration(name: &str, v: &Value) -> Result<Option<GoDuration>, String> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => GoDuration::parse(s)
            .map(Some)
            .map_err(|_| format!("error decoding '{name}': {}", go_duration_error(s))),
        Value::Number(n) => Ok(Some(GoDuration(n.as_f64().unwrap_or(0.0) as i64))),
        Value::Bool(b) => Ok(Some(GoDuration(i64::from(*b)))),
        other => Err(unconvertible(name, "time.Duration", other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(body: &str) -> ChainOverrides {
        decode_overrides(body.as_bytes()).unwrap()
    }

    fn err(body: &str) -> String {
        match decode_overrides(body.as_bytes()).unwrap_err() {
            ChainError::BadRequest(text) => text,
            other => panic!("expected 400, got {other:?}"),
        }
    }

    #[test]
    fn accepts_both_key_styles() {
        let want = ChainOverrides {
            protocol: Some("grpc".into()),
            connect_timeout: Some(GoDuration(22_000_000_000)),
            mesh_gateway_mode: Some("local".into()),
        };
        let camel = r#"{"OverrideMeshGateway":{"Mode":"local"},"OverrideProtocol":"grpc","OverrideConnectTimeout":"22s"}"#;
        let snake = r#"{"override_mesh_gateway":{"mode":"local"},"override_protocol":"grpc","override_connect_timeout":"22s"}"#;
        let shouty = r#"{"OVERRIDEMESHGATEWAY":[{"MODE":"local"}],"overrideprotocol":["grpc"],"OverrideConnectTimeout":22000000000}"#;
        assert_eq!(ok(camel), want);
        assert_eq!(ok(snake), want);
        assert_eq!(ok(shouty), want);
    }

    #[test]
    fn zero_values_and_unknown_keys_mean_no_override() {
        let empty = ChainOverrides::default();
        assert_eq!(ok("{}"), empty);
        assert_eq!(ok("null"), empty);
        assert_eq!(ok("{} trailing"), empty);
        assert_eq!(
            ok(r#"{"OverrideMeshGateway":{},"OverrideProtocol":"","OverrideConnectTimeout":0}"#),
            empty
        );
        assert_eq!(
            ok(r#"{"Bogus":1,"OverrideMeshGateway":{"Mode":""}}"#),
            empty
        );
        assert_eq!(
            ok(r#"{"OverrideProtocol":true}"#).protocol.as_deref(),
            Some("1")
        );
        assert_eq!(
            ok(r#"{"OverrideProtocol":"HTTP"}"#).protocol.as_deref(),
            Some("HTTP")
        );
    }

    #[test]
    fn error_texts() {
        let cases: &[(&str, &str)] = &[
            ("", "Request decoding failed: EOF"),
            ("  ", "Request decoding failed: EOF"),
            ("{", "Request decoding failed: unexpected EOF"),
            (
                "x",
                "Request decoding failed: invalid character 'x' looking for beginning of value",
            ),
            (
                "[1]",
                "Request decoding failed: json: cannot unmarshal array into Go value of type map[string]interface {}",
            ),
            (
                r#""grpc""#,
                "Request decoding failed: json: cannot unmarshal string into Go value of type map[string]interface {}",
            ),
            (
                r#"{"OverrideConnectTimeout":"soon"}"#,
                "Request decoding failed: 1 error(s) decoding:\n\n* error decoding 'OverrideConnectTimeout': time: invalid duration \"soon\"",
            ),
            (
                r#"{"OverrideConnectTimeout":"10"}"#,
                "Request decoding failed: 1 error(s) decoding:\n\n* error decoding 'OverrideConnectTimeout': time: missing unit in duration \"10\"",
            ),
            (
                r#"{"OverrideConnectTimeout":""}"#,
                "Request decoding failed: 1 error(s) decoding:\n\n* error decoding 'OverrideConnectTimeout': time: invalid duration \"\"",
            ),
            (
                r#"{"OverrideMeshGateway":"local","OverrideProtocol":{"a":1}}"#,
                "Request decoding failed: 2 error(s) decoding:\n\n* 'OverrideMeshGateway' expected a map, got 'string'\n* 'OverrideProtocol' expected type 'string', got unconvertible type 'map[string]interface {}', value: 'map[a:1]'",
            ),
            (
                r#"{"OverrideMeshGateway":{"Mode":["a","b"]}}"#,
                "Request decoding failed: 1 error(s) decoding:\n\n* 'OverrideMeshGateway.Mode' expected type 'string', got unconvertible type '[]interface {}', value: '[a b]'",
            ),
            (
                r#"{"OverrideConnectTimeout":{}}"#,
                "Request decoding failed: 1 error(s) decoding:\n\n* 'OverrideConnectTimeout' expected type 'time.Duration', got unconvertible type 'map[string]interface {}', value: 'map[]'",
            ),
            (
                r#"{"OverrideMeshGateway":{"Mode":"bogus"}}"#,
                "Invalid OverrideMeshGateway.Mode parameter",
            ),
            (
                r#"{"OverrideMeshGateway":{"Mode":"LOCAL"}}"#,
                "Invalid OverrideMeshGateway.Mode parameter",
            ),
        ];
        for (body, want) in cases {
            assert_eq!(err(body), *want, "body {body:?}");
        }
    }
}
