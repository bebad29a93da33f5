//! Go-compatible text and JSON helpers for the chain: `%q` quoting, `%v` printing of decoded JSON,
//! `time.ParseDuration` error texts, float32 weights as Go's encoder writes them, and lenient serde
//! adapters for durations read from the config-entry read shape.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::go::duration::{DurationError, GoDuration, parse_nanos};

pub(crate) use crate::go::gotext::go_quote;

/// The error Go's `time.ParseDuration` returns for `input` (call only when parsing failed): the
/// workspace's one parser decides which, the texts quote with `%q` as these bodies do.
pub(crate) fn go_duration_error(input: &str) -> String {
    match parse_nanos(input) {
        Err(DurationError::MissingUnit(_)) => {
            format!("time: missing unit in duration {}", go_quote(input))
        }
        Err(DurationError::UnknownUnit { unit, .. }) => format!(
            "time: unknown unit {} in duration {}",
            go_quote(&unit),
            go_quote(input)
        ),
        // Out of range, or not a duration at all.
        _ => format!("time: invalid duration {}", go_quote(input)),
    }
}

/// Go's name for the dynamic type of a value decoded from JSON into `interface{}`.
pub(crate) fn go_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Go's reflect kind name for a JSON-decoded value (`reflect.Kind.String()`).
pub(crate) fn go_kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "invalid",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "slice",
        Value::Object(_) => "map",
    }
}

/// Go's `%v` of a JSON-decoded value: `map[a:1 b:[x y]]`, `1e+06`, `<nil>`.
pub(crate) fn go_fmt_v(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_fmt_g(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(go_fmt_v).collect();
            format!("[{}]", parts.join(" "))
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{k}:{}", go_fmt_v(&map[k])))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`, which is what `%v` prints for a float64.
pub(crate) fn go_fmt_g(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_owned();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if f < 0.0 { "-" } else { "" };
    if (-4..6).contains(&exp) {
        return format!("{sign}{}", f.abs());
    }
    let exp_sign = if exp < 0 { '-' } else { '+' };
    format!("{sign}{mantissa}e{exp_sign}{:02}", exp.unsigned_abs())
}

/// Serializes a float32 weight as Go's JSON encoder writes it (`100`, `33.33`, `0.01`).
pub(crate) fn ser_f32<S: Serializer>(w: &f32, s: S) -> Result<S::Ok, S::Error> {
    let text = w.to_string();
    if let Ok(int) = text.parse::<i64>() {
        return s.serialize_i64(int);
    }
    s.serialize_f64(text.parse::<f64>().unwrap_or(f64::from(*w)))
}

pub(crate) fn is_zero_f32(w: &f32) -> bool {
    *w == 0.0
}

pub(crate) fn is_zero_i64(v: &i64) -> bool {
    *v == 0
}

pub(crate) fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

pub(crate) fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

/// Writes nanoseconds as a Go duration string (`"5s"`), like Consul's custom marshallers.
pub(crate) fn ser_duration_str<S: Serializer>(ns: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&GoDuration(*ns).to_string())
}

/// Reads a duration written either as a Go duration string or as integer nanoseconds.
pub(crate) fn de_duration<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(0),
        Value::String(text) if text.is_empty() => Ok(0),
        Value::String(text) => GoDuration::parse(&text)
            .map(|g| g.0)
            .map_err(|_| serde::de::Error::custom(go_duration_error(&text))),
        Value::Number(n) => Ok(n
            .as_i64()
            .unwrap_or_else(|| n.as_f64().unwrap_or(0.0) as i64)),
        other => Err(serde::de::Error::custom(format!(
            "expected a duration, got {}",
            go_type_name(&other)
        ))),
    }
}

/// A JSON value written as Go writes a decoded `interface{}`: object keys sorted at every level,
/// integral numbers without a fraction.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GoValue(pub Value);

impl Serialize for GoValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match &self.0 {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                let mut m = s.serialize_map(Some(keys.len()))?;
                for k in keys {
                    m.serialize_entry(k, &Self(map[k].clone()))?;
                }
                m.end()
            }
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&Self(item.clone()))?;
                }
                seq.end()
            }
            Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => s.serialize_i64(i),
                (None, Some(u), _) => s.serialize_u64(u),
                (None, None, Some(f)) if f.fract() == 0.0 && f.abs() < 1.0e21 => {
                    s.serialize_i128(f as i128)
                }
                (None, None, f) => s.serialize_f64(f.unwrap_or(0.0)),
            },
            other => other.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for GoValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(GoValue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn duration_errors_read_like_go() {
        let cases = [
            ("", r#"time: invalid duration """#),
            ("abc", r#"time: invalid duration "abc""#),
            ("10", r#"time: missing unit in duration "10""#),
            ("5x", r#"time: unknown unit "x" in duration "5x""#),
            ("1h2", r#"time: missing unit in duration "1h2""#),
            ("-", r#"time: invalid duration "-""#),
            (".s", r#"time: invalid duration ".s""#),
        ];
        for (input, want) in cases {
            assert!(
                GoDuration::parse(input).is_err(),
                "{input:?} must not parse"
            );
            assert_eq!(go_duration_error(input), want, "{input:?}");
        }
    }

    #[test]
    fn percent_v_matches_go() {
        assert_eq!(
            go_fmt_v(&json!({"b": [1, "x"], "a": true})),
            "map[a:true b:[1 x]]"
        );
        assert_eq!(go_fmt_v(&json!(1_000_000)), "1e+06");
        assert_eq!(go_fmt_v(&json!(123_456)), "123456");
        assert_eq!(go_fmt_v(&json!(0.5)), "0.5");
        assert_eq!(go_fmt_v(&json!(0.00001)), "1e-05");
        assert_eq!(go_fmt_v(&json!(1.5e300)), "1.5e+300");
        assert_eq!(go_fmt_v(&json!(null)), "<nil>");
    }

    #[test]
    fn weights_and_values_serialize_like_go() {
        #[derive(Serialize)]
        struct W(#[serde(serialize_with = "ser_f32")] f32);
        assert_eq!(serde_json::to_string(&W(100.0)).unwrap(), "100");
        assert_eq!(serde_json::to_string(&W(33.33)).unwrap(), "33.33");
        assert_eq!(serde_json::to_string(&W(0.01)).unwrap(), "0.01");
        let v = GoValue(json!({"z": 1.0, "a": {"y": 2, "b": 0.5}}));
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"a":{"b":0.5,"y":2},"z":1}"#
        );
    }

    #[test]
    fn quotes_like_go() {
        assert_eq!(go_quote("web"), r#""web""#);
        assert_eq!(go_quote("a\"b\n"), r#""a\"b\n""#);
        assert_eq!(go_quote("\u{1}"), r#""\x01""#);
    }
}
