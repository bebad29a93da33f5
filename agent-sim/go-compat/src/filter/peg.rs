//! The parsing machine under the grammar: a backtracking PEG cursor that reports failures the
//! way the pigeon-generated Go parser behind go-bexpr does. It remembers the farthest position
//! where a match failed and what was expected there (inverted inside `!` lookaheads), records
//! errors raised by grammar predicates as `line:col (offset): rule <name>: <message>`, and
//! answers `no match found, expected: ...` when nothing else was recorded.

use std::collections::HashMap;

use super::ast::Expr;
use super::coerce::go_quote;

/// A safety net against pathological inputs: this many rule invocations and the parse gives up.
const MAX_STEPS: u32 = 1_000_000;
/// Nested rule invocations allowed. Only parentheses nest rules without bound (four per level;
/// `and`/`or` chains and runs of `not` are loops), so this allows about 45 levels, which take
/// under 400 KiB of stack in a debug build.
const MAX_RULE_DEPTH: usize = 200;

/// Rules whose results are memoized (their re-parses during backtracking are identical).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Memo {
    Or,
    And,
    Not,
}

/// The parser state.
pub(super) struct Peg<'a> {
    src: &'a str,
    pub(super) pos: usize,
    max_fail_pos: usize,
    max_fail_expected: Vec<String>,
    invert: bool,
    errors: Vec<String>,
    rules: Vec<&'static str>,
    steps: u32,
    limit_hit: bool,
    memo: HashMap<(Memo, usize), Option<(Expr, usize)>>,
}

impl<'a> Peg<'a> {
    pub(super) fn new(src: &'a str) -> Self {
        Self {
            src,
            pos: 0,
            max_fail_pos: 0,
            max_fail_expected: Vec::new(),
            invert: false,
            errors: Vec::new(),
            rules: Vec::new(),
            steps: 0,
            limit_hit: false,
            memo: HashMap::new(),
        }
    }

    /// The outcome of a parse whose start rule returned `result`: pigeon returns the recorded
    /// errors even when the input matched.
    pub(super) fn finish(mut self, result: Option<Expr>) -> Result<Expr, String> {
        if self.errors.is_empty() {
            if let Some(e) = result {
                return Ok(e);
            }
            let mut expected = std::mem::take(&mut self.max_fail_expected);
            expected.sort();
            expected.dedup();
            let eof = expected.iter().position(|w| w == "!.");
            if let Some(i) = eof {
                expected.remove(i);
                expected.push("EOF".to_owned());
            }
            let text = format!("no match found, expected: {}", list_join(&expected));
            let at = self.position(self.max_fail_pos);
            self.errors.push(format!("{at}: {text}"));
        }
        let mut seen = Vec::new();
        for e in self.errors {
            if !seen.contains(&e) {
                seen.push(e);
            }
        }
        Err(seen.join("\n"))
    }

    /// `line:col (offset)` of a byte offset, as pigeon counts: columns in runes, and a newline
    /// itself already belongs to the next line (at column 0).
    fn position(&self, offset: usize) -> String {
        let before = &self.src[..offset];
        let current_is_newline = self.src[offset..].starts_with('\n');
        let line = 1 + before.matches('\n').count() + usize::from(current_is_newline);
        let col = if current_is_newline {
            0
        } else {
            let line_start = before.rfind('\n').map_or(0, |i| i + 1);
            before[line_start..].chars().count() + 1
        };
        format!("{line}:{col} ({offset})")
    }

    /// Records an error raised by grammar code at `offset`, inside the innermost rule.
    pub(super) fn add_err(&mut self, offset: usize, msg: &str) {
        let mut text = self.position(offset);
        if let Some(rule) = self.rules.last() {
            text.push_str(": rule ");
            text.push_str(rule);
        }
        text.push_str(": ");
        text.push_str(msg);
        self.errors.push(text);
    }

    fn fail_at(&mut self, fail: bool, offset: usize, want: &str) {
        if fail != self.invert || offset < self.max_fail_pos {
            return;
        }
        if offset > self.max_fail_pos {
            self.max_fail_pos = offset;
            self.max_fail_expected.clear();
        }
        let want = if self.invert {
            format!("!{want}")
        } else {
            want.to_owned()
        };
        self.max_fail_expected.push(want);
    }

    /// Invokes a grammar rule: tracks the rule stack (for error prefixes), enforces the limits,
    /// and leaves the position untouched when the rule fails.
    pub(super) fn rule<T>(
        &mut self,
        name: &'static str,
        body: impl FnOnce(&mut Self) -> Option<T>,
    ) -> Option<T> {
        if self.limit_hit {
            return None;
        }
        self.steps += 1;
        if self.steps > MAX_STEPS || self.rules.len() >= MAX_RULE_DEPTH {
            self.limit_hit = true;
            let msg = if self.steps > MAX_STEPS {
                "max number of expressions parsed"
            } else {
                "maximum nesting depth exceeded"
            };
            self.add_err(self.pos, msg);
            return None;
        }
        let start = self.pos;
        self.rules.push(name);
        let out = body(self);
        self.rules.pop();
        if out.is_none() {
            self.pos = start;
        }
        out
    }

    /// A memoized rule: a second attempt at the same position replays the first result (the
    /// failures and errors it recorded are already recorded, so nothing observable changes).
    pub(super) fn memo_rule(
        &mut self,
        key: Memo,
        name: &'static str,
        body: impl FnOnce(&mut Self) -> Option<Expr>,
    ) -> Option<Expr> {
        if !self.invert
            && let Some(hit) = self.memo.get(&(key, self.pos))
        {
            return hit.clone().map(|(e, end)| {
                self.pos = end;
                e
            });
        }
        let start = self.pos;
        let out = self.rule(name, body);
        if !self.invert && !self.limit_hit {
            let entry = out.clone().map(|e| (e, self.pos));
            self.memo.insert((key, start), entry);
        }
        out
    }

    /// A sequence: on failure the position goes back to where it started.
    pub(super) fn seq<T>(&mut self, body: impl FnOnce(&mut Self) -> Option<T>) -> Option<T> {
        let start = self.pos;
        let out = body(self);
        if out.is_none() {
            self.pos = start;
        }
        out
    }

    /// A literal.
    pub(super) fn lit(&mut self, s: &'static str) -> Option<()> {
        let start = self.pos;
        let ok = self.src[start..].starts_with(s);
        if ok {
            self.pos += s.len();
        }
        self.fail_at(ok, start, &go_quote(s));
        ok.then_some(())
    }

    /// One character of a class; `want` is the class as the grammar spells it.
    pub(super) fn class(&mut self, want: &'static str, pred: fn(char) -> bool) -> Option<()> {
        let start = self.pos;
        let c = self.src[start..].chars().next().filter(|&c| pred(c));
        if let Some(c) = c {
            self.pos += c.len_utf8();
        }
        self.fail_at(c.is_some(), start, want);
        c.map(|_| ())
    }

    /// Any one character (`.`).
    pub(super) fn any(&mut self) -> Option<()> {
        let start = self.pos;
        let c = self.src[start..].chars().next();
        if let Some(c) = c {
            self.pos += c.len_utf8();
        }
        self.fail_at(c.is_some(), start, ".");
        c.map(|_| ())
    }

    /// `!e`: succeeds, consuming nothing, when `e` fails; expectations inside are inverted.
    pub(super) fn not_ahead<T>(&mut self, e: impl FnOnce(&mut Self) -> Option<T>) -> Option<()> {
        let start = self.pos;
        self.invert = !self.invert;
        let matched = e(self).is_some();
        self.invert = !self.invert;
        self.pos = start;
        (!matched).then_some(())
    }

    /// `&e`: succeeds, consuming nothing, when `e` matches.
    pub(super) fn and_ahead<T>(&mut self, e: impl FnOnce(&mut Self) -> Option<T>) -> Option<()> {
        let start = self.pos;
        let matched = e(self).is_some();
        self.pos = start;
        matched.then_some(())
    }

    /// The text from `start` to the current position.
    pub(super) fn text_from(&self, start: usize) -> &'a str {
        &self.src[start..self.pos]
    }
}

/// Go's `listJoin(list, ", ", "or")`.
fn list_join(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}
