//! The syntax tree of a filter expression, shaped like go-bexpr's (v0.1.2) AST: boolean
//! combinators over match expressions of a selector, an operator and an optional raw value.

use regex::Regex;

/// A parsed expression.
#[derive(Debug, Clone)]
pub(crate) enum Expr {
    /// `not <expr>`.
    Not(Box<Self>),
    /// `<a> and <b> and ...`: one chain of the grammar, at least two terms (go-bexpr nests the
    /// same chain to the right; evaluation order and results are the same).
    And(Vec<Self>),
    /// `<a> or <b> or ...`, likewise.
    Or(Vec<Self>),
    /// A single matching expression.
    Match(Match),
}

/// `<selector> <op> <value>`, `<selector> is [not] empty` or `<value> [not] in <selector>`.
#[derive(Debug, Clone)]
pub(crate) struct Match {
    /// The selector's segments: `Service.Meta["a-b"]` is `["Service", "Meta", "a-b"]`.
    pub(crate) selector: Vec<String>,
    pub(crate) op: Op,
    /// The value as written (unquoted); `None` for the emptiness operators.
    pub(crate) value: Option<String>,
    /// The compiled value of `matches` / `not matches`.
    pub(crate) regex: Option<Regex>,
}

impl Match {
    /// The selector as go-bexpr prints it in messages: segments joined with `.`.
    pub(crate) fn selector_text(&self) -> String {
        self.selector.join(".")
    }

    /// The raw value (`""` for the emptiness operators, which carry none).
    pub(crate) fn raw(&self) -> &str {
        self.value.as_deref().unwrap_or("")
    }
}

/// A matching operator. `contains` parses to [`Op::In`] and `not contains` to [`Op::NotIn`],
/// exactly as in go-bexpr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Equal,
    NotEqual,
    In,
    NotIn,
    IsEmpty,
    IsNotEmpty,
    Matches,
    NotMatches,
}

impl Op {
    /// The operator's name in go-bexpr messages (`MatchOperator.String()`).
    pub(crate) fn go_name(self) -> &'static str {
        match self {
            Self::Equal => "Equal",
            Self::NotEqual => "Not Equal",
            Self::In => "In",
            Self::NotIn => "Not In",
            Self::IsEmpty => "Is Empty",
            Self::IsNotEmpty => "Is Not Empty",
            Self::Matches => "Matches",
            Self::NotMatches => "Not Matches",
        }
    }

    /// What go-bexpr answers when a map key on the selector path does not exist: the value
    /// cannot be equal to, contain, or be non-empty; every negated form holds; and (a quirk of
    /// v0.1.2, kept on purpose) `matches` also holds.
    pub(crate) fn missing_key_result(self) -> bool {
        !matches!(self, Self::Equal | Self::IsNotEmpty | Self::In)
    }
}
