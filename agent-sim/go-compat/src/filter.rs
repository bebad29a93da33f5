//! `?filter=` boolean expressions, compatible with go-bexpr v0.1.2 (the version Consul links):
//! the same grammar and parser messages, the same matching rules, evaluated over the JSON items
//! an endpoint renders (selectors are Go field names, which are the JSON keys).
//!
//! ```
//! use go_compat::filter::{Filter, AGENT_SERVICE_FIELDS};
//! let expr = r#"Kind == "connect-proxy" and Tags contains v2"#;
//! let f = Filter::parse_for(expr, AGENT_SERVICE_FIELDS)?;
//! let svc = serde_json::json!({"Kind": "connect-proxy", "ID": "db-proxy", "Tags": ["v2"]});
//! assert!(f.matches(&svc)?);
//! # Ok::<(), go_compat::filter::FilterError>(())
//! ```
//!
//! Matching follows go-bexpr: a list met before the selector ends is an implicit *any*, for
//! every operator (`Checks.Status != passing` holds when some check is not passing); a key
//! missing from a map (`Meta`, `TaggedAddresses`, ...) makes `==`, `contains` and `is not empty`
//! false and every other operator true, `matches` included; `contains`/`in` tests substrings of
//! strings, elements of lists and keys of maps; numbers and booleans compare after coercing the
//! value as Go's `strconv` does. Every error is Consul's 500 body ([`FilterError`]).
//!
//! Where this differs from Consul, on purpose or by necessity:
//! - Consul validates every selector, operator and value against the Go type before looking at
//!   any data. Here only the first selector segment is checked up front (against the item
//!   type's field list given to [`Filter::parse_for`]); deeper checks (a segment under a string,
//!   `==` on a list, a value that does not coerce to a number) happen when an item reaches them,
//!   with Consul's message. A filter that is wrong only below the first segment therefore fails
//!   only when there is data to evaluate.
//! - Consul cannot select into `Proxy.Config` (an `interface{}` map); this evaluator can.
//! - A field the renderer omitted (`omitempty`) is taken as its zero value without knowing its
//!   type: it equals `""`, `0` and `false` alike and is empty. Consul uses the field's real type
//!   (so `is empty` on an omitted string is an error there, and a nil pointer such as a typical
//!   service's `Proxy` in `/v1/agent/services` fails evaluation).
//! - Regular expressions use Rust's `regex` (RE2 syntax like Go's `regexp`; `\d`, `\w`, `\s`
//!   and `\b` are Unicode-aware here and ASCII in Go).
//! - Parentheses nest at most 48 deep (200 nested grammar rules) and parsing gives up after a
//!   million rule invocations, with a parser error; go-bexpr v0.1.2 has no such limits. `and`/`or`
//!   chains and runs of `not` are unlimited.

mod ast;
mod coerce;
mod eval;
mod grammar;
mod peg;

#[cfg(test)]
mod tests;

use regex::Regex;
use serde_json::Value;

use self::ast::{Expr, Op};
use self::coerce::go_quote;

/// The fields go-bexpr can select on a `/v1/health/*` entry (`structs.CheckServiceNode`).
pub const HEALTH_ENTRY_FIELDS: &[&str] = &["Node", "Service", "Checks"];

/// The fields go-bexpr can select on a `/v1/catalog/service/:service` item
/// (`structs.ServiceNode`; `ServiceLocality`, the enterprise meta and the raft indexes are
/// tagged `bexpr:"-"`).
pub const CATALOG_SERVICE_FIELDS: &[&str] = &[
    "ID",
    "Node",
    "Address",
    "Datacenter",
    "TaggedAddresses",
    "NodeMeta",
    "ServiceKind",
    "ServiceID",
    "ServiceName",
    "ServiceTags",
    "ServiceAddress",
    "ServiceTaggedAddresses",
    "ServiceWeights",
    "ServiceMeta",
    "ServicePort",
    "ServiceSocketPath",
    "ServiceEnableTagOverride",
    "ServiceProxy",
    "ServiceConnect",
    "PeerName",
];

/// The fields go-bexpr can select on a `/v1/agent/services` value (`api.AgentService`;
/// `CreateIndex`, `ModifyIndex`, `ContentHash`, `Namespace`, `Partition`, `Datacenter` and
/// `Locality` are tagged `bexpr:"-"`).
pub const AGENT_SERVICE_FIELDS: &[&str] = &[
    "Kind",
    "ID",
    "Service",
    "Tags",
    "Meta",
    "Port",
    "Address",
    "SocketPath",
    "TaggedAddresses",
    "Weights",
    "EnableTagOverride",
    "Proxy",
    "Connect",
    "PeerName",
];

/// The fields go-bexpr can select on a `/v1/catalog/nodes` item (`structs.Node`; the raft
/// indexes, `RaftIndex` and the enterprise meta are tagged `bexpr:"-"`).
pub const NODE_FIELDS: &[&str] = &[
    "ID",
    "Node",
    "Address",
    "Datacenter",
    "PeerName",
    "TaggedAddresses",
    "Meta",
];

/// The fields go-bexpr can select on a `/v1/connect/intentions` item (`structs.Intention`;
/// `CreatedAt`, `UpdatedAt`, `Hash` and the raft indexes are tagged `bexpr:"-"`).
pub const INTENTION_FIELDS: &[&str] = &[
    "ID",
    "Description",
    "SourcePeer",
    "SourceNS",
    "SourceName",
    "DestinationNS",
    "DestinationName",
    "SourcePartition",
    "DestinationPartition",
    "SourceSamenessGroup",
    "SourceType",
    "Action",
    "Permissions",
    "JWT",
    "Precedence",
    "Meta",
    "LegacyMeta",
];

/// The prefix Consul puts before every parse or validation message.
const CREATE_PREFIX: &str = "Failed to create boolean expression evaluator: ";

/// Why a filter could not be created or evaluated. The `Display` text is the body Consul
/// answers with (status 500).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    /// The expression does not parse; the go-bexpr parser's message, e.g.
    /// `1:8 (7): no match found, expected: "!=", ".", "==", "[", [ \t\r\n] or [a-zA-Z0-9_]`.
    #[error("{CREATE_PREFIX}{0}")]
    Syntax(String),
    /// A selector names no field.
    #[error("{CREATE_PREFIX}Selector {} is not valid", go_quote(.selector))]
    InvalidSelector {
        /// The selector up to and including the segment that does not exist.
        selector: String,
    },
    /// The operator does not apply to the selected field's type.
    #[error("{CREATE_PREFIX}Invalid match operator {} for selector {}", go_quote(.op), go_quote(.selector))]
    InvalidOperator {
        /// go-bexpr's name of the operator (`Equal`, `Not In`, `Is Empty`, ...).
        op: &'static str,
        /// The whole selector.
        selector: String,
    },
    /// The value does not convert to the field's type.
    #[error("{CREATE_PREFIX}Failed to coerce value {} for selector {}: {reason}", go_quote(.value), go_quote(.selector))]
    Coerce {
        /// The value as written.
        value: String,
        /// The whole selector.
        selector: String,
        /// Go's `strconv` error.
        reason: String,
    },
    /// A `matches` value is not a regular expression.
    #[error("{CREATE_PREFIX}Failed to compile regular expression {}: {reason}", go_quote(.pattern))]
    Regex {
        /// The pattern as written.
        pattern: String,
        /// Why it does not compile.
        reason: String,
    },
    /// [`Filter::apply`] was given something other than an array or an object.
    #[error("Only slices, arrays and maps are filterable")]
    NotFilterable,
}

/// A parsed `?filter=` expression.
#[derive(Debug, Clone)]
pub struct Filter {
    source: String,
    expr: Expr,
    fields: Option<&'static [&'static str]>,
}

impl Filter {
    /// Parses an expression for items of unknown type: a selector whose first segment is not a
    /// key of the item being evaluated is an error then.
    pub fn parse(expr: &str) -> Result<Self, FilterError> {
        Self::build(expr, None)
    }

    /// Parses an expression for items whose selectable top-level fields are `fields` (one of
    /// the `*_FIELDS` lists): a selector starting elsewhere is rejected here, as Consul does
    /// before looking at any data. A listed field missing from an item is an omitted zero value.
    pub fn parse_for(expr: &str, fields: &'static [&'static str]) -> Result<Self, FilterError> {
        Self::build(expr, Some(fields))
    }

    fn build(expr: &str, fields: Option<&'static [&'static str]>) -> Result<Self, FilterError> {
        let ast = grammar::parse(expr).map_err(FilterError::Syntax)?;
        Ok(Self {
            source: expr.to_owned(),
            expr: prepare(ast, fields)?,
            fields,
        })
    }

    /// The expression as given.
    pub fn expression(&self) -> &str {
        &self.source
    }

    /// Whether one item matches.
    pub fn matches(&self, item: &Value) -> Result<bool, FilterError> {
        eval::eval(&self.expr, item, self.fields.is_none())
    }

    /// Keeps the matching elements of an array, or the entries of an object whose values match
    /// (go-bexpr's `Filter.Execute`); the first evaluation error fails the whole call.
    pub fn apply(&self, data: Value) -> Result<Value, FilterError> {
        match data {
            Value::Array(items) => {
                let mut kept = Vec::with_capacity(items.len());
                for item in items {
                    if self.matches(&item)? {
                        kept.push(item);
                    }
                }
                Ok(Value::Array(kept))
            }
            Value::Object(entries) => {
                let mut kept = serde_json::Map::new();
                for (key, item) in entries {
                    if self.matches(&item)? {
                        kept.insert(key, item);
                    }
                }
                Ok(Value::Object(kept))
            }
            _ => Err(FilterError::NotFilterable),
        }
    }
}

impl std::fmt::Display for Filter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.source)
    }
}

/// Validates each match expression, left to right as go-bexpr does (the first selector segment
/// against `fields`, then the regular expression), and stores the compiled regexes.
fn prepare(expr: Expr, fields: Option<&[&str]>) -> Result<Expr, FilterError> {
    Ok(match expr {
        Expr::Not(e) => Expr::Not(Box::new(prepare(*e, fields)?)),
        Expr::And(terms) => Expr::And(prepare_all(terms, fields)?),
        Expr::Or(terms) => Expr::Or(prepare_all(terms, fields)?),
        Expr::Match(mut m) => {
            let first = m.selector.first().map(String::as_str).unwrap_or_default();
            if fields.is_some_and(|f| !f.contains(&first)) {
                return Err(FilterError::InvalidSelector {
                    selector: first.to_owned(),
                });
            }
            m.regex = compile_regex(&m)?;
            Expr::Match(m)
        }
    })
}

fn prepare_all(terms: Vec<Expr>, fields: Option<&[&str]>) -> Result<Vec<Expr>, FilterError> {
    terms.into_iter().map(|t| prepare(t, fields)).collect()
}

/// Compiles a `matches` value, with a message shaped like Go's `regexp` errors.
fn compile_regex(m: &ast::Match) -> Result<Option<Regex>, FilterError> {
    if !matches!(m.op, Op::Matches | Op::NotMatches) {
        return Ok(None);
    }
    let pattern = m.raw();
    Regex::new(pattern).map(Some).map_err(|e| {
        let text = e.to_string();
        let detail = text
            .lines()
            .rev()
            .find_map(|l| l.trim().strip_prefix("error: "))
            .unwrap_or(text.trim());
        FilterError::Regex {
            pattern: pattern.to_owned(),
            reason: format!("error parsing regexp: {detail}: `{pattern}`"),
        }
    })
}
