//! Scalar conversions of the decoder with mapstructure's weak typing and error texts, and Go's
//! `%v`/`%T` renderings of JSON-decoded values.

use std::fmt::Write as _;

use serde_json::Value;

use crate::go::duration::GoDuration;
use crate::go::gotext::go_quote;

fn unconvertible(name: &str, go_type: &str, data: &Value) -> String {
    format!(
        "'{name}' expected type '{go_type}', got unconvertible type '{}', value: '{}'",
        go_type_of(data),
        go_v(data)
    )
}

pub(super) fn to_string(name: &str, data: &Value) -> Result<Value, String> {
    match data {
        Value::String(s) => Ok(Value::String(s.clone())),
        Value::Bool(b) => Ok(Value::String(if *b { "1" } else { "0" }.into())),
        Value::Number(n) => Ok(Value::String(format_float_f(
            n.as_f64().unwrap_or_default(),
        ))),
        other => Err(unconvertible(name, "string", other)),
    }
}

pub(super) fn to_bool(name: &str, data: &Value) -> Result<Value, String> {
    match data {
        Value::Bool(b) => Ok(Value::Bool(*b)),
        Value::Number(n) => Ok(Value::Bool(n.as_f64().unwrap_or_default() != 0.0)),
        Value::String(s) => match s.as_str() {
            "" => Ok(Value::Bool(false)),
            "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(Value::Bool(true)),
            "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(Value::Bool(false)),
            _ => Err(format!(
                "cannot parse '{name}' as bool: strconv.ParseBool: parsing {}: invalid syntax",
                go_quote(s)
            )),
        },
        other => Err(unconvertible(name, "bool", other)),
    }
}

pub(super) fn to_int(name: &str, data: &Value, go: &str, signed: bool) -> Result<Value, String> {
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
                        go_quote(s)
                    ));
                }
                None => {
                    return Err(format!(
                        "cannot parse '{name}' as {kind}: strconv.{func}: parsing {}: invalid syntax",
                        go_quote(s)
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

pub(super) fn to_float(name: &str, data: &Value) -> Result<Value, String> {
    match data {
        Value::Number(n) => Ok(Value::from(n.as_f64().unwrap_or_default())),
        Value::Bool(b) => Ok(Value::from(if *b { 1.0 } else { 0.0 })),
        Value::String(s) if s.is_empty() => Ok(Value::from(0.0)),
        Value::String(s) => s.parse::<f64>().map(Value::from).map_err(|_| {
            format!(
                "cannot parse '{name}' as float: strconv.ParseFloat: parsing {}: invalid syntax",
                go_quote(s)
            )
        }),
        other => Err(unconvertible(name, "float32", other)),
    }
}

pub(super) fn to_duration(name: &str, data: &Value) -> Result<Value, String> {
    match data {
        // mapstructure.StringToTimeDurationHookFunc
        Value::String(s) => GoDuration::parse(s)
            .map(|d| Value::from(d.0))
            .map_err(|e| format!("error decoding '{name}': {e}")),
        other => to_int(name, other, "time.Duration", true),
    }
}

/// reflect.Kind names, as `'%s' expected a map, got '%s'` prints them.
pub(super) fn go_kind(v: &Value) -> &'static str {
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
