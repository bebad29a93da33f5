//! go-bexpr's v0.1.2 grammar (the version Consul links), rule for rule, on the [`Peg`] machine.
//! Rule names and display names match the Go parser's, so its error texts come out the same,
//! e.g. `1:9 (8): rule "number": Invalid number literal`.
//!
//! ```text
//! Input      <- _? "(" _? Or _? ")" _? EOF / _? Or _? EOF
//! Or         <- And _ "or" _ Or / And
//! And        <- Not _ "and" _ And / Not
//! Not        <- "not" _ Not / Grouping
//! Grouping   <- "(" _? Or _? ")" / Match / "(" _? Or _? !")" &{Unmatched parentheses}
//! Match      <- Selector SelOp Value / Selector EmptyOp / Value InOp Selector
//!             / Value InOp !Selector &{Invalid selector}
//! Selector   <- Identifier ("." Identifier / Index)*
//! Identifier <- [a-zA-Z] [a-zA-Z0-9_]*
//! Index      <- "[" _? String _? "]" / "[" _? !String &{Invalid index}
//!             / "[" _? String _? !"]" &{Unclosed index expression}
//! Value      <- Selector / Number / String
//! Number     <- "-"? ("0" / [1-9][0-9]*) ("." [0-9]+)?
//!               (&(_ / EOF / ")") / !(...) &{Invalid number literal})
//! String     <- "`" (!"`" .)* "`" / '"' (!'"' .)* '"'
//!             / ("`" (!"`" .)* / '"' (!'"' .)*) EOF &{Unterminated string literal}
//! ```

use super::ast::{Expr, Match, Op};
use super::peg::{Memo, Peg};

mod terms;

/// Parses a filter expression; the error is the Go parser's message.
pub(crate) fn parse(src: &str) -> Result<Expr, String> {
    let mut p = Peg::new(src);
    let out = p.input();
    p.finish(out)
}

/// A piece of an operator rule.
#[derive(Clone, Copy)]
enum Tok {
    Ws,
    OptWs,
    Lit(&'static str),
}

use Tok::{Lit, OptWs, Ws};

/// An operator rule: its name, its tokens, and the operator it yields.
type OpRule = (&'static str, &'static [Tok], Op);

const EQUAL: OpRule = ("MatchEqual", &[OptWs, Lit("=="), OptWs], Op::Equal);
const NOT_EQUAL: OpRule = ("MatchNotEqual", &[OptWs, Lit("!="), OptWs], Op::NotEqual);
const IS_EMPTY: OpRule = (
    "MatchIsEmpty",
    &[Ws, Lit("is"), Ws, Lit("empty")],
    Op::IsEmpty,
);
const IS_NOT_EMPTY: OpRule = (
    "MatchIsNotEmpty",
    &[Ws, Lit("is"), Ws, Lit("not"), Ws, Lit("empty")],
    Op::IsNotEmpty,
);
const IN: OpRule = ("MatchIn", &[Ws, Lit("in"), Ws], Op::In);
const NOT_IN: OpRule = (
    "MatchNotIn",
    &[Ws, Lit("not"), Ws, Lit("in"), Ws],
    Op::NotIn,
);
const CONTAINS: OpRule = ("MatchContains", &[Ws, Lit("contains"), Ws], Op::In);
const NOT_CONTAINS: OpRule = (
    "MatchNotContains",
    &[Ws, Lit("not"), Ws, Lit("contains"), Ws],
    Op::NotIn,
);
const MATCHES: OpRule = ("MatchMatches", &[Ws, Lit("matches"), Ws], Op::Matches);
const NOT_MATCHES: OpRule = (
    "MatchNotMatches",
    &[Ws, Lit("not"), Ws, Lit("matches"), Ws],
    Op::NotMatches,
);

impl Peg<'_> {
    fn input(&mut self) -> Option<Expr> {
        self.rule("Input", |p| {
            let grouped = p.seq(|p| {
                p.opt_ws();
                p.lit("(")?;
                p.opt_ws();
                let e = p.or_expr()?;
                p.opt_ws();
                p.lit(")")?;
                p.opt_ws();
                p.eof()?;
                Some(e)
            });
            grouped.or_else(|| {
                p.seq(|p| {
                    p.opt_ws();
                    let e = p.or_expr()?;
                    p.opt_ws();
                    p.eof()?;
                    Some(e)
                })
            })
        })
    }

    /// `And _ "or" _ Or / And`, parsed as a loop: the same attempts at the same positions as the
    /// right recursion (whose fallback re-parse of `And` is a memo hit), without the stack.
    fn or_expr(&mut self) -> Option<Expr> {
        self.memo_rule(Memo::Or, "OrExpression", |p| {
            p.chain(Self::and_expr, "or")
                .map(|terms| chain_expr(terms, Expr::Or))
        })
    }

    /// `Not _ "and" _ And / Not`, likewise.
    fn and_expr(&mut self) -> Option<Expr> {
        self.memo_rule(Memo::And, "AndExpression", |p| {
            p.chain(Self::not_expr, "and")
                .map(|terms| chain_expr(terms, Expr::And))
        })
    }

    /// `term (_ keyword _ term)*`.
    fn chain(
        &mut self,
        term: fn(&mut Self) -> Option<Expr>,
        keyword: &'static str,
    ) -> Option<Vec<Expr>> {
        let mut terms = vec![term(self)?];
        while let Some(next) = self.seq(|p| {
            p.ws()?;
            p.lit(keyword)?;
            p.ws()?;
            term(p)
        }) {
            terms.push(next);
        }
        Some(terms)
    }

    /// `"not" _ Not / Grouping`, parsed as a loop: read every leading `not`, then try the
    /// grouping after the last one, then after the one before, and so on, as the recursion
    /// would on failing; each `not` that stays a keyword negates (`not not x` is `x`).
    fn not_expr(&mut self) -> Option<Expr> {
        self.memo_rule(Memo::Not, "NotExpression", |p| {
            let mut starts = vec![p.pos];
            while p
                .seq(|p| {
                    p.lit("not")?;
                    p.ws()
                })
                .is_some()
            {
                starts.push(p.pos);
            }
            for (negations, &start) in starts.iter().enumerate().rev() {
                p.pos = start;
                if let Some(mut e) = p.grouping() {
                    for _ in 0..negations {
                        e = match e {
                            Expr::Not(inner) => *inner,
                            other => Expr::Not(Box::new(other)),
                        };
                    }
                    return Some(e);
                }
            }
            None
        })
    }

    fn grouping(&mut self) -> Option<Expr> {
        self.rule("\"grouping\"", |p| {
            let grouped = p.seq(|p| {
                p.lit("(")?;
                p.opt_ws();
                let e = p.or_expr()?;
                p.opt_ws();
                p.lit(")")?;
                Some(e)
            });
            if grouped.is_some() {
                return grouped;
            }
            if let Some(m) = p.match_expr() {
                return Some(Expr::Match(m));
            }
            p.seq(|p| {
                p.lit("(")?;
                p.opt_ws();
                p.or_expr()?;
                p.opt_ws();
                p.not_ahead(|p| p.lit(")"))?;
                p.add_err(p.pos, "Unmatched parentheses");
                None
            })
        })
    }

    fn match_expr(&mut self) -> Option<Match> {
        self.rule("\"match\"", |p| {
            let sel_op_value = p.rule("\"match\"", |p| {
                p.seq(|p| {
                    let selector = p.selector()?;
                    let op = p.first_op(&[
                        EQUAL,
                        NOT_EQUAL,
                        CONTAINS,
                        NOT_CONTAINS,
                        MATCHES,
                        NOT_MATCHES,
                    ])?;
                    let value = p.value()?;
                    Some(new_match(selector, op, Some(value)))
                })
            });
            sel_op_value
                .or_else(|| {
                    p.rule("\"match\"", |p| {
                        p.seq(|p| {
                            let selector = p.selector()?;
                            let op = p.first_op(&[IS_EMPTY, IS_NOT_EMPTY])?;
                            Some(new_match(selector, op, None))
                        })
                    })
                })
                .or_else(|| p.rule("\"match\"", Self::value_in_selector))
        })
    }

    /// `Value InOp Selector / Value InOp !Selector &{Invalid selector}`.
    fn value_in_selector(&mut self) -> Option<Match> {
        let found = self.seq(|p| {
            let value = p.value()?;
            let op = p.first_op(&[IN, NOT_IN])?;
            let selector = p.selector()?;
            Some(new_match(selector, op, Some(value)))
        });
        found.or_else(|| {
            self.seq(|p| {
                p.value()?;
                p.first_op(&[IN, NOT_IN])?;
                p.not_ahead(Self::selector)?;
                p.add_err(p.pos, "Invalid selector");
                None
            })
        })
    }

    /// The first operator rule (in order) that matches.
    fn first_op(&mut self, rules: &[OpRule]) -> Option<Op> {
        rules.iter().find_map(|&(name, toks, op)| {
            self.rule(name, |p| {
                p.seq(|p| {
                    for tok in toks {
                        match tok {
                            Ws => p.ws()?,
                            OptWs => p.opt_ws(),
                            Lit(s) => p.lit(s)?,
                        }
                    }
                    Some(op)
                })
            })
        })
    }
}

/// One term is itself; more are a chain.
fn chain_expr(mut terms: Vec<Expr>, make: fn(Vec<Expr>) -> Expr) -> Expr {
    if terms.len() == 1 {
        terms.remove(0)
    } else {
        make(terms)
    }
}

fn new_match(selector: Vec<String>, op: Op, value: Option<String>) -> Match {
    Match {
        selector,
        op,
        value,
        regex: None,
    }
}
