//! The operands of go-bexpr's grammar: selectors (`a.b["c"]`), values (a selector, a number or
//! a string literal, with Go's unquoting), whitespace and the end of input.

use crate::filter::coerce::unquote;
use crate::filter::peg::Peg;

const WS: &str = "[ \\t\\r\\n]";

fn is_ws(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

impl Peg<'_> {
    pub(super) fn selector(&mut self) -> Option<Vec<String>> {
        self.rule("\"selector\"", |p| {
            let mut path = vec![p.identifier()?];
            while let Some(next) = p.selector_or_index() {
                path.push(next);
            }
            Some(path)
        })
    }

    fn identifier(&mut self) -> Option<String> {
        self.rule("Identifier", |p| {
            let start = p.pos;
            p.class("[a-zA-Z]", |c| c.is_ascii_alphabetic())?;
            while p
                .class("[a-zA-Z0-9_]", |c| c.is_ascii_alphanumeric() || c == '_')
                .is_some()
            {}
            Some(p.text_from(start).to_owned())
        })
    }

    fn selector_or_index(&mut self) -> Option<String> {
        self.rule("SelectorOrIndex", |p| {
            p.seq(|p| {
                p.lit(".")?;
                p.identifier()
            })
            .or_else(|| p.index())
        })
    }

    fn index(&mut self) -> Option<String> {
        self.rule("\"index\"", |p| {
            let closed = p.seq(|p| {
                p.lit("[")?;
                p.opt_ws();
                let key = p.string_literal()?;
                p.opt_ws();
                p.lit("]")?;
                Some(key)
            });
            if closed.is_some() {
                return closed;
            }
            // The two remaining alternatives only ever fail, reporting why.
            let _ = p.seq(|p| {
                p.lit("[")?;
                p.opt_ws();
                p.not_ahead(Self::string_literal)?;
                p.add_err(p.pos, "Invalid index");
                None::<String>
            });
            p.seq(|p| {
                p.lit("[")?;
                p.opt_ws();
                p.string_literal()?;
                p.opt_ws();
                p.not_ahead(|p| p.lit("]"))?;
                p.add_err(p.pos, "Unclosed index expression");
                None
            })
        })
    }

    /// A value's raw text: a selector (its segments joined with `.`), a number or a string.
    pub(super) fn value(&mut self) -> Option<String> {
        self.rule("\"value\"", |p| {
            p.selector()
                .map(|s| s.join("."))
                .or_else(|| p.number_literal())
                .or_else(|| p.string_literal())
        })
    }

    fn number_literal(&mut self) -> Option<String> {
        self.rule("\"number\"", |p| {
            let good = p.seq(|p| {
                let start = p.pos;
                p.integer_or_float()?;
                p.after_numbers()?;
                Some(p.text_from(start).to_owned())
            });
            if good.is_some() {
                return good;
            }
            p.seq(|p| {
                p.integer_or_float()?;
                p.not_ahead(Self::after_numbers)?;
                p.add_err(p.pos, "Invalid number literal");
                None
            })
        })
    }

    /// `"-"? ("0" / [1-9][0-9]*) ("." [0-9]+)?` (the optional sign folded in here).
    fn integer_or_float(&mut self) -> Option<()> {
        let _ = self.lit("-");
        self.rule("IntegerOrFloat", |p| {
            let int = p.lit("0").or_else(|| {
                p.class("[1-9]", |c| matches!(c, '1'..='9'))?;
                while p.class("[0-9]", |c| c.is_ascii_digit()).is_some() {}
                Some(())
            });
            int?;
            let _ = p.seq(|p| {
                p.lit(".")?;
                p.class("[0-9]", |c| c.is_ascii_digit())?;
                while p.class("[0-9]", |c| c.is_ascii_digit()).is_some() {}
                Some(())
            });
            Some(())
        })
    }

    fn after_numbers(&mut self) -> Option<()> {
        self.rule("AfterNumbers", |p| {
            p.and_ahead(|p| p.ws().or_else(|| p.eof()).or_else(|| p.lit(")")))
        })
    }

    fn string_literal(&mut self) -> Option<String> {
        self.rule("\"string\"", |p| {
            let start = p.pos;
            let closed = p
                .seq(|p| {
                    p.lit("`")?;
                    while p.raw_string_char().is_some() {}
                    p.lit("`")
                })
                .or_else(|| {
                    p.seq(|p| {
                        p.lit("\"")?;
                        while p.double_string_char().is_some() {}
                        p.lit("\"")
                    })
                });
            if closed.is_some() {
                return Some(unquote(p.text_from(start)).unwrap_or_else(|| {
                    p.add_err(start, "invalid syntax");
                    String::new()
                }));
            }
            p.seq(|p| {
                let open = p
                    .seq(|p| {
                        p.lit("`")?;
                        while p.raw_string_char().is_some() {}
                        Some(())
                    })
                    .or_else(|| {
                        p.seq(|p| {
                            p.lit("\"")?;
                            while p.double_string_char().is_some() {}
                            Some(())
                        })
                    });
                open?;
                p.eof()?;
                p.add_err(p.pos, "Unterminated string literal");
                None
            })
        })
    }

    fn raw_string_char(&mut self) -> Option<()> {
        self.rule("RawStringChar", |p| {
            p.seq(|p| {
                p.not_ahead(|p| p.lit("`"))?;
                p.any()
            })
        })
    }

    fn double_string_char(&mut self) -> Option<()> {
        self.rule("DoubleStringChar", |p| {
            p.seq(|p| {
                p.not_ahead(|p| p.lit("\""))?;
                p.any()
            })
        })
    }

    /// `_`: one or more whitespace characters.
    pub(super) fn ws(&mut self) -> Option<()> {
        self.rule("\"whitespace\"", |p| {
            p.class(WS, is_ws)?;
            while p.class(WS, is_ws).is_some() {}
            Some(())
        })
    }

    /// `_?`.
    pub(super) fn opt_ws(&mut self) {
        let _ = self.ws();
    }

    pub(super) fn eof(&mut self) -> Option<()> {
        self.rule("EOF", |p| p.not_ahead(Self::any))
    }
}
