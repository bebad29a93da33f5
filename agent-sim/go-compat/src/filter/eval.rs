//! Evaluating a parsed expression against one item as the endpoint renders it (JSON), with
//! go-bexpr v0.1.2's matching rules mapped onto JSON kinds:
//!
//! - A selector walks object keys. An array met before the selector ends is an implicit *any*:
//!   the rest of the selector is tried on every element and one match is enough, for every
//!   operator (so `Checks.Status != passing` holds when *some* check is not passing, and
//!   nothing holds on an empty array).
//! - Objects are Go maps under the keys in [`MAP_FIELDS`] and structs everywhere else. A key
//!   missing from a map answers like go-bexpr (`==`, `contains`/`in`, `is not empty`: false;
//!   everything else, `matches` included, true). A key missing from a struct is a field the
//!   renderer omitted because it holds its zero value, so it compares as the zero value: equal
//!   to `""`, `0` or `false` in any spelling, empty, matched like `""`.
//! - At the end of the selector: strings take `==`, `!=`, `contains`/`in` (substring) and
//!   `matches`; numbers and booleans take `==`/`!=` with the value coerced like Go's `strconv`
//!   (a value that does not coerce is an error); arrays take `in`/`contains` (element
//!   equality) and `is [not] empty`; maps take `in` (key membership) and `is [not] empty`;
//!   structs take nothing. Anything else is go-bexpr's `Invalid match operator` error.

use serde_json::{Number, Value};

use super::FilterError;
use super::ast::{Expr, Match, Op};
use super::coerce::{parse_bool, parse_float, parse_int, parse_uint};

/// Keys whose values are Go maps in the types Consul filters (`Meta`, `NodeMeta`,
/// `ServiceMeta`, both `TaggedAddresses`, `Proxy.Config`, `Upstreams[].Config`, a check
/// definition's `Header`, an Envoy extension's `Arguments`); every other object is a struct.
pub(crate) const MAP_FIELDS: &[&str] = &[
    "Meta",
    "NodeMeta",
    "ServiceMeta",
    "TaggedAddresses",
    "ServiceTaggedAddresses",
    "Config",
    "Header",
    "Arguments",
];

/// Evaluates `expr` on `item`. `strict_top`: the first selector segment must be a key of the
/// item (used when no field list was validated at parse time).
pub(crate) fn eval(expr: &Expr, item: &Value, strict_top: bool) -> Result<bool, FilterError> {
    match expr {
        Expr::Not(e) => Ok(!eval(e, item, strict_top)?),
        Expr::And(terms) => {
            for t in terms {
                if !eval(t, item, strict_top)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        Expr::Or(terms) => {
            for t in terms {
                if eval(t, item, strict_top)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        Expr::Match(m) => walk(m, 0, item, false, strict_top),
    }
}

/// Follows the selector from segment `depth` on, `v` being the value reached so far and
/// `in_map` whether `v` is a Go map (else a struct, a slice or a primitive).
fn walk(
    m: &Match,
    depth: usize,
    v: &Value,
    in_map: bool,
    strict_top: bool,
) -> Result<bool, FilterError> {
    let Some(segment) = m.selector.get(depth) else {
        return leaf(m, v, in_map);
    };
    match v {
        Value::Array(items) => {
            for item in items {
                if walk(m, depth, item, false, strict_top)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        Value::Object(fields) => match fields.get(segment) {
            Some(child) => {
                let child_is_map = !in_map && MAP_FIELDS.contains(&segment.as_str());
                walk(m, depth + 1, child, child_is_map, strict_top)
            }
            None if in_map => Ok(m.op.missing_key_result()),
            None if depth == 0 && strict_top => Err(invalid_selector(m, depth)),
            None => Ok(zero_value(m)),
        },
        Value::Null if in_map => Ok(m.op.missing_key_result()),
        Value::Null => Ok(zero_value(m)),
        Value::String(_) | Value::Number(_) | Value::Bool(_) => Err(invalid_selector(m, depth)),
    }
}

/// The operator applied to the value the whole selector reached.
fn leaf(m: &Match, v: &Value, is_map: bool) -> Result<bool, FilterError> {
    let op = m.op;
    let raw = m.raw();
    let positive = matches!(op, Op::Equal | Op::In | Op::IsEmpty | Op::Matches);
    let found = match (v, op) {
        (Value::String(s), Op::Equal | Op::NotEqual) => s == raw,
        (Value::String(s), Op::In | Op::NotIn) => s.contains(raw),
        (Value::String(s), Op::Matches | Op::NotMatches) => regex_matches(m, s),
        (Value::Number(n), Op::Equal | Op::NotEqual) => number_equals(m, n)?,
        (Value::Bool(b), Op::Equal | Op::NotEqual) => coerced(m, parse_bool(raw))? == *b,
        (Value::Array(items), Op::In | Op::NotIn) => array_contains(m, items)?,
        (Value::Array(items), Op::IsEmpty | Op::IsNotEmpty) => items.is_empty(),
        (Value::Object(map), Op::In | Op::NotIn) if is_map => map.contains_key(raw),
        (Value::Object(map), Op::IsEmpty | Op::IsNotEmpty) if is_map => map.is_empty(),
        // A nil map or slice: contains nothing, is empty.
        (Value::Null, Op::In | Op::NotIn) => false,
        (Value::Null, Op::IsEmpty | Op::IsNotEmpty) => true,
        _ => return Err(invalid_operator(m)),
    };
    Ok(found == positive)
}

/// The answer for a struct field the renderer omitted (its zero value, of unknown type).
fn zero_value(m: &Match) -> bool {
    let raw = m.raw();
    match m.op {
        Op::Equal => is_zero_literal(raw),
        Op::NotEqual => !is_zero_literal(raw),
        Op::In => raw.is_empty(),
        Op::NotIn => !raw.is_empty(),
        Op::Matches => regex_matches(m, ""),
        Op::NotMatches => !regex_matches(m, ""),
        Op::IsEmpty => true,
        Op::IsNotEmpty => false,
    }
}

/// Whether `raw` spells the zero value of a string, number or boolean.
fn is_zero_literal(raw: &str) -> bool {
    raw.is_empty()
        || parse_bool(raw) == Ok(false)
        || parse_int(raw) == Ok(0)
        || parse_float(raw) == Ok(0.0)
}

fn regex_matches(m: &Match, s: &str) -> bool {
    m.regex.as_ref().is_some_and(|re| re.is_match(s))
}

/// `==` on a number: the value is coerced to the number's Go type (int, uint or float).
fn number_equals(m: &Match, n: &Number) -> Result<bool, FilterError> {
    let raw = m.raw();
    if let Some(i) = n.as_i64() {
        Ok(coerced(m, parse_int(raw))? == i)
    } else if let Some(u) = n.as_u64() {
        Ok(coerced(m, parse_uint(raw))? == u)
    } else {
        let f = n.as_f64().unwrap_or(f64::NAN);
        Ok(coerced(m, parse_float(raw))? == f)
    }
}

/// `in` on an array: an element equal to the value (coerced to the element's type).
fn array_contains(m: &Match, items: &[Value]) -> Result<bool, FilterError> {
    let raw = m.raw();
    for item in items {
        let equal = match item {
            Value::String(s) => s == raw,
            Value::Number(n) => number_equals(m, n)?,
            Value::Bool(b) => coerced(m, parse_bool(raw))? == *b,
            Value::Null => false,
            Value::Array(_) | Value::Object(_) => return Err(invalid_operator(m)),
        };
        if equal {
            return Ok(true);
        }
    }
    Ok(false)
}

fn coerced<T>(m: &Match, parsed: Result<T, String>) -> Result<T, FilterError> {
    parsed.map_err(|reason| FilterError::Coerce {
        value: m.raw().to_owned(),
        selector: m.selector_text(),
        reason,
    })
}

/// go-bexpr names the selector up to the segment that does not exist.
fn invalid_selector(m: &Match, depth: usize) -> FilterError {
    FilterError::InvalidSelector {
        selector: m.selector[..=depth].join("."),
    }
}

fn invalid_operator(m: &Match) -> FilterError {
    FilterError::InvalidOperator {
        op: m.op.go_name(),
        selector: m.selector_text(),
    }
}
