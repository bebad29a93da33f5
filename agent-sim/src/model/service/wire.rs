//! Small helpers for building Go-shaped JSON: ordered objects with `omitempty` members, Go's
//! map key order (sorted) for opaque user maps, and Go's rendering of JSON numbers.

use std::collections::BTreeMap;

use serde_json::{Map, Number, Value};

use super::model::{Locality, ServiceAddress};

/// An object under construction, keys in insertion (Go struct) order.
#[derive(Default)]
pub(crate) struct Obj(Map<String, Value>);

impl Obj {
    pub(crate) fn new() -> Self {
        Self(Map::new())
    }

    /// Always present.
    pub(crate) fn put(&mut self, key: &str, value: impl Into<Value>) -> &mut Self {
        self.0.insert(key.to_owned(), value.into());
        self
    }

    /// `omitempty` string.
    pub(crate) fn str_opt(&mut self, key: &str, value: &str) -> &mut Self {
        if !value.is_empty() {
            self.put(key, value);
        }
        self
    }

    /// `omitempty` number.
    pub(crate) fn num_opt(&mut self, key: &str, value: u64) -> &mut Self {
        if value != 0 {
            self.put(key, value);
        }
        self
    }

    /// `omitempty` bool.
    pub(crate) fn bool_opt(&mut self, key: &str, value: bool) -> &mut Self {
        if value {
            self.put(key, true);
        }
        self
    }

    /// `omitempty` object (`None` or empty omitted).
    pub(crate) fn obj_opt(&mut self, key: &str, value: Option<Value>) -> &mut Self {
        match value {
            Some(Value::Object(m)) if m.is_empty() => {}
            Some(v) => {
                self.put(key, v);
            }
            None => {}
        }
        self
    }

    pub(crate) fn build(&mut self) -> Value {
        Value::Object(std::mem::take(&mut self.0))
    }
}

/// A user-data value as Go re-encodes it after decoding into `interface{}`: object keys sorted,
/// integral numbers without a fraction.
pub(crate) fn go_value(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.clone(), go_value(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(go_value).collect()),
        Value::Number(n) => Value::Number(go_number(n)),
        other => other.clone(),
    }
}

fn go_number(n: &Number) -> Number {
    match n.as_f64() {
        Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15 => Number::from(f as i64),
        _ => n.clone(),
    }
}

/// An opaque map (`Config`), Go-ordered; `None` when empty (so `omitempty` drops it).
pub(crate) fn opaque_map(m: &Map<String, Value>) -> Option<Value> {
    if m.is_empty() {
        None
    } else {
        Some(go_value(&Value::Object(m.clone())))
    }
}

/// A `map[string]string` (sorted, as Go marshals maps).
pub(crate) fn string_map(m: &BTreeMap<String, String>) -> Value {
    Value::Object(
        m.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

/// A `map[string]string` that is `null` when empty (a Go nil map).
pub(crate) fn string_map_or_null(m: &BTreeMap<String, String>) -> Value {
    if m.is_empty() {
        Value::Null
    } else {
        string_map(m)
    }
}

/// `TaggedAddresses` of a service: `{"name":{"Address":..,"Port":..}}`, `None` when empty.
pub(crate) fn service_addresses(m: &BTreeMap<String, ServiceAddress>) -> Option<Value> {
    if m.is_empty() {
        return None;
    }
    Some(Value::Object(
        m.iter()
            .map(|(k, a)| {
                let v = Obj::new()
                    .put("Address", a.address.as_str())
                    .put("Port", a.port)
                    .build();
                (k.clone(), v)
            })
            .collect(),
    ))
}

/// `Locality` (`omitempty` members).
pub(crate) fn locality(l: &Locality) -> Value {
    Obj::new()
        .str_opt("Region", &l.region)
        .str_opt("Zone", &l.zone)
        .build()
}

/// A string list that is never `null`.
pub(crate) fn string_list(items: &[String]) -> Value {
    Value::Array(items.iter().cloned().map(Value::String).collect())
}
