//! Decoding a CA configuration PUT the way Consul does: the body with Go's `encoding/json`
//! (field names case-insensitive, unknown fields ignored), the provider's `Config` map with
//! mapstructure (weakly typed, unknown keys ignored, Consul's defaults for missing keys), with
//! Go's error texts.

use std::time::Duration;

use serde_json::{Map, Value};

use super::CaError;
use crate::go::duration::GoDuration;

/// The top level of a PUT body.
pub(crate) struct ConfigRequest {
    pub(crate) provider: String,
    pub(crate) config: Map<String, Value>,
    pub(crate) force_without_cross_signing: bool,
    /// A non-empty `State` was sent (the built-in provider's state is read-only).
    pub(crate) state_given: bool,
}

/// Decodes the body of `PUT /v1/connect/ca/configuration`. Type errors are `CaError::Decode`
/// (Consul answers 400 `Request decode failed: ...`).
pub(crate) fn decode_request(body: &Value) -> Result<ConfigRequest, CaError> {
    let Value::Object(obj) = body else {
        return Err(CaError::Decode(format!(
            "json: cannot unmarshal {} into Go value of type structs.CAConfiguration",
            json_kind(body)
        )));
    };
    let type_error = |field: &str, v: &Value, go_type: &str| {
        CaError::Decode(format!(
            "json: cannot unmarshal {} into Go struct field CAConfiguration.{field} of type {go_type}",
            json_kind(v)
        ))
    };
    let provider = match lookup(obj, "Provider") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => return Err(type_error("Provider", v, "string")),
    };
    let config = match lookup(obj, "Config") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(v) => return Err(type_error("Config", v, "map[string]interface {}")),
    };
    let state_given = match lookup(obj, "State") {
        None | Some(Value::Null) => false,
        Some(Value::Object(m)) => {
            if let Some(bad) = m.values().find(|v| !v.is_string()) {
                return Err(type_error("State", bad, "string"));
            }
            !m.is_empty()
        }
        Some(v) => return Err(type_error("State", v, "map[string]string")),
    };
    let mut force = false;
    for name in ["ForceWithoutCrossSigning", "force_without_cross_signing"] {
        match lookup(obj, name) {
            None | Some(Value::Null) => {}
            Some(Value::Bool(b)) => force |= *b,
            Some(v) => return Err(type_error(name, v, "bool")),
        }
    }
    Ok(ConfigRequest {
        provider,
        config,
        force_without_cross_signing: force,
        state_given,
    })
}

/// The consul provider's settings, decoded from the `Config` map.
#[derive(Debug, Clone)]
pub(crate) struct ProviderConfig {
    pub(crate) leaf_ttl: Duration,
    pub(crate) intermediate_ttl: Duration,
    pub(crate) root_ttl: Duration,
    pub(crate) key_type: String,
    pub(crate) key_bits: i64,
    pub(crate) private_key: String,
    pub(crate) root_cert: String,
    pub(crate) disable_cross_signing: bool,
    pub(crate) skip_validate: bool,
    /// `CSRMaxPerSecond` (0: unlimited).
    pub(crate) csr_max_per_second: f64,
    /// `CSRMaxConcurrent` (accepted, inert: see `csr_limit.rs`).
    pub(crate) csr_max_concurrent: i64,
}

impl ProviderConfig {
    /// mapstructure decoding over Consul's defaults (not over the current config: a PUT
    /// replaces the whole map). Errors are mapstructure's per-field texts, unsorted.
    pub(crate) fn decode(map: &Map<String, Value>) -> Result<Self, Vec<String>> {
        let mut errors = Vec::new();
        let field = |name: &str| lookup(map, name).filter(|v| !v.is_null());
        let mut cfg = Self {
            leaf_ttl: Duration::from_secs(72 * 3600),
            intermediate_ttl: Duration::from_secs(8760 * 3600),
            root_ttl: Duration::from_secs(87600 * 3600),
            key_type: "ec".into(),
            key_bits: 256,
            private_key: String::new(),
            root_cert: String::new(),
            disable_cross_signing: false,
            skip_validate: false,
            csr_max_per_second: 0.0,
            csr_max_concurrent: 0,
        };
        let mut note = |r: Result<(), String>| {
            if let Err(e) = r {
                errors.push(e);
            }
        };
        for (name, slot) in [
            ("LeafCertTTL", &mut cfg.leaf_ttl),
            ("IntermediateCertTTL", &mut cfg.intermediate_ttl),
            ("RootCertTTL", &mut cfg.root_ttl),
        ] {
            if let Some(v) = field(name) {
                note(weak_duration(name, v).map(|d| *slot = d));
            }
        }
        for (name, slot) in [
            ("PrivateKeyType", &mut cfg.key_type),
            ("PrivateKey", &mut cfg.private_key),
            ("RootCert", &mut cfg.root_cert),
        ] {
            if let Some(v) = field(name) {
                note(weak_string(name, v).map(|s| *slot = s));
            }
        }
        if let Some(v) = field("PrivateKeyBits") {
            note(weak_int("PrivateKeyBits", v).map(|n| cfg.key_bits = n));
        }
        if let Some(v) = field("CSRMaxConcurrent") {
            note(weak_int("CSRMaxConcurrent", v).map(|n| cfg.csr_max_concurrent = n));
        }
        if let Some(v) = field("CSRMaxPerSecond") {
            note(weak_float("CSRMaxPerSecond", v).map(|r| cfg.csr_max_per_second = r));
        }
        for (name, slot) in [
            ("DisableCrossSigning", &mut cfg.disable_cross_signing),
            ("SkipValidate", &mut cfg.skip_validate),
        ] {
            if let Some(v) = field(name) {
                note(weak_bool(name, v).map(|b| *slot = b));
            }
        }
        if errors.is_empty() {
            Ok(cfg)
        } else {
            Err(errors)
        }
    }
}

/// A field by name: exact match first, then ASCII case-insensitive (Go's and mapstructure's
/// matching).
fn lookup<'a>(map: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    map.get(name).or_else(|| {
        map.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    })
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The Go type `encoding/json` gives a JSON value inside `map[string]interface{}`.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn unconvertible(name: &str, want: &str, v: &Value) -> String {
    format!(
        "'{name}' expected type '{want}', got unconvertible type '{}', value: '{v}'",
        go_type(v)
    )
}

fn number_as_i64(n: &serde_json::Number) -> i64 {
    // Go converts the float64 with a truncating int64() conversion.
    n.as_i64()
        .unwrap_or_else(|| n.as_f64().map_or(0, |f| f as i64))
}

/// `time.Duration` through Consul's `ParseDurationFunc` hook: strings parse as Go durations,
/// numbers are nanoseconds. Negative values become zero (and then fail validation).
fn weak_duration(name: &str, v: &Value) -> Result<Duration, String> {
    let nanos = match v {
        Value::String(s) => {
            GoDuration::parse(s)
                .map_err(|e| format!("error decoding '{name}': {e}"))?
                .0
        }
        Value::Number(n) => number_as_i64(n),
        Value::Bool(b) => i64::from(*b),
        other => return Err(unconvertible(name, "time.Duration", other)),
    };
    Ok(GoDuration(nanos).to_std())
}

fn weak_string(name: &str, v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Bool(b) => Ok(if *b { "1" } else { "0" }.into()),
        Value::Number(n) => Ok(match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(f)) => f.to_string(),
            (None, None) => n.to_string(),
        }),
        other => Err(unconvertible(name, "string", other)),
    }
}

fn weak_int(name: &str, v: &Value) -> Result<i64, String> {
    match v {
        Value::Number(n) => Ok(number_as_i64(n)),
        Value::Bool(b) => Ok(i64::from(*b)),
        Value::String(s) if s.is_empty() => Ok(0),
        Value::String(s) => s.parse().map_err(|_| {
            format!("cannot parse '{name}' as int: strconv.ParseInt: parsing {s:?}: invalid syntax")
        }),
        other => Err(unconvertible(name, "int", other)),
    }
}

fn weak_float(name: &str, v: &Value) -> Result<f64, String> {
    match v {
        Value::Number(n) => Ok(n.as_f64().unwrap_or(0.0)),
        Value::Bool(b) => Ok(f64::from(u8::from(*b))),
        Value::String(s) if s.is_empty() => Ok(0.0),
        Value::String(s) => s.parse().map_err(|_| {
            format!(
                "cannot parse '{name}' as float: strconv.ParseFloat: parsing {s:?}: invalid syntax"
            )
        }),
        other => Err(unconvertible(name, "float32", other)),
    }
}

/// A weakly typed bool (strconv.ParseBool spellings, numbers non-zero, empty string false).
pub(crate) fn weak_bool(name: &str, v: &Value) -> Result<bool, String> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::Number(n) => Ok(n.as_f64().is_some_and(|f| f != 0.0)),
        Value::String(s) => match s.as_str() {
            "" | "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
            "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
            _ => Err(format!(
                "cannot parse '{name}' as bool: strconv.ParseBool: parsing {s:?}: invalid syntax"
            )),
        },
        other => Err(unconvertible(name, "bool", other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn missing_keys_take_consul_defaults() {
        let cfg = ProviderConfig::decode(&Map::new()).unwrap();
        assert_eq!(cfg.leaf_ttl, Duration::from_secs(72 * 3600));
        assert_eq!(cfg.intermediate_ttl, Duration::from_secs(8760 * 3600));
        assert_eq!(cfg.root_ttl, Duration::from_secs(87600 * 3600));
        assert_eq!((cfg.key_type.as_str(), cfg.key_bits), ("ec", 256));
    }

    #[test]
    fn keys_match_case_insensitively_and_weakly() {
        let cfg = ProviderConfig::decode(&map(json!({
            "leafcertttl": "90m", "PrivateKeyBits": "256", "DisableCrossSigning": "true",
            "RootCertTTL": 3_600_000_000_000u64, "Unknown": [1]
        })))
        .unwrap();
        assert_eq!(cfg.leaf_ttl, Duration::from_secs(5400));
        assert_eq!(cfg.key_bits, 256);
        assert!(cfg.disable_cross_signing);
        assert_eq!(cfg.root_ttl, Duration::from_secs(3600));
    }

    #[test]
    fn errors_use_go_texts() {
        let errors = ProviderConfig::decode(&map(json!({
            "LeafCertTTL": "abc", "PrivateKeyBits": "x", "PrivateKeyType": ["ec"]
        })))
        .unwrap_err();
        assert!(
            errors.contains(
                &r#"error decoding 'LeafCertTTL': time: invalid duration "abc""#.to_owned()
            )
        );
        assert!(errors.contains(
            &r#"cannot parse 'PrivateKeyBits' as int: strconv.ParseInt: parsing "x": invalid syntax"#.to_owned()
        ));
        assert!(errors.iter().any(|e| e.starts_with(
            "'PrivateKeyType' expected type 'string', got unconvertible type '[]interface {}'"
        )));
    }

    #[test]
    fn request_fields_decode_with_go_type_errors() {
        let req = decode_request(&json!({
            "provider": "consul", "Config": {"LeafCertTTL": "1h"}, "force_without_cross_signing": true
        }))
        .unwrap();
        assert_eq!(req.provider, "consul");
        assert!(req.force_without_cross_signing);
        assert!(!req.state_given);
        let Err(CaError::Decode(msg)) = decode_request(&json!({"Provider": 5})) else {
            panic!("expected a decode error")
        };
        assert_eq!(
            msg,
            "json: cannot unmarshal number into Go struct field CAConfiguration.Provider of type string"
        );
        assert!(matches!(
            decode_request(&json!([])),
            Err(CaError::Decode(_))
        ));
        assert!(matches!(
            decode_request(&json!({"Config": "x"})),
            Err(CaError::Decode(_))
        ));
        assert!(
            decode_request(&json!({"State": {"a": "b"}}))
                .unwrap()
                .state_given
        );
    }
}
