//! "Within T" and "stable for S" evaluation, independent of what is observed: poll an
//! observation until it holds or the deadline passes (recording when it became true), then keep
//! observing and fail on the first contrary observation. Uses tokio time, so tests run it on a
//! paused clock.

use std::time::Duration;

use tokio::time::Instant;

/// One observation: whether what was seen is what a correct proxy shows, and what was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Observation {
    pub(crate) ok: bool,
    pub(crate) text: String,
    /// When the observed state began, if the probe knows (e.g. when a connection was closed);
    /// otherwise the observation's own time counts.
    pub(crate) since: Option<Instant>,
}

impl Observation {
    pub(crate) fn new(ok: bool, text: impl Into<String>) -> Self {
        Self {
            ok,
            text: text.into(),
            since: None,
        }
    }
}

/// How to evaluate one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    /// When the clock started (the triggering step).
    pub(crate) start: Instant,
    /// It may take this long from `start`; `None`: it must hold at the first observation.
    pub(crate) within: Option<Duration>,
    /// Keep waiting up to this long from `start` to measure how late it is (non-strict
    /// bounds); `None` or not above `within`: stop at `within`.
    pub(crate) late: Option<Duration>,
    /// Once true it must stay true this long.
    pub(crate) stable_for: Option<Duration>,
    /// Pause between observations while waiting.
    pub(crate) poll: Duration,
    /// Pause between observations while checking stability.
    pub(crate) stable_poll: Duration,
}

impl Plan {
    /// A plan with the default poll intervals (100 ms waiting, 150 ms stable).
    pub(crate) fn new(
        start: Instant,
        within: Option<Duration>,
        stable_for: Option<Duration>,
    ) -> Self {
        Self {
            start,
            within,
            late: None,
            stable_for,
            poll: Duration::from_millis(100),
            stable_poll: Duration::from_millis(150),
        }
    }
}

/// How a check ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Became true within the bound (and stayed true).
    Held { took: Duration },
    /// Became true after the bound but before the `late` limit (and stayed true).
    Late { took: Duration },
    /// Never became true; the last thing seen.
    Never { last: String },
    /// Not true at the first look, which came after the whole window had passed (earlier
    /// checks used it up): this check cannot be judged, neither passed nor failed.
    Unjudged { last: String, first_look: Duration },
    /// Became true, then a contrary observation `after` it became true.
    Broke {
        took: Duration,
        after: Duration,
        observed: String,
    },
}

/// The outcome plus every change of what was seen (for the timeline).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Evaluation {
    pub(crate) outcome: Outcome,
    /// The first observation and every change of `ok`, with their time.
    pub(crate) transitions: Vec<(Instant, Observation)>,
    /// Observations made.
    pub(crate) observations: u32,
    /// What was seen when it held (or the last thing seen).
    pub(crate) last: String,
}

/// What the driver does next.
#[derive(Debug)]
pub(crate) enum Next {
    /// Sleep this long, observe again and `feed` the observation.
    Wait(Duration),
    /// Decided.
    Done(Evaluation),
}

#[derive(Debug, Clone)]
enum Phase {
    Waiting,
    Stable {
        became: Instant,
        text: String,
        end: Instant,
    },
}

/// The evaluation of one plan, fed one observation at a time by a driver loop:
///
/// ```ignore
/// let mut ev = Evaluator::new(plan);
/// let evaluation = loop {
///     match ev.feed(observe().await) {
///         Next::Wait(d) => tokio::time::sleep(d).await,
///         Next::Done(e) => break e,
///     }
/// };
/// ```
#[derive(Debug)]
pub(crate) struct Evaluator {
    plan: Plan,
    /// True at the first possible look is never late, even when earlier checks made the
    /// harness look after the bound.
    first_look: Instant,
    phase: Phase,
    transitions: Vec<(Instant, Observation)>,
    count: u32,
}

impl Evaluator {
    /// Starts evaluating now.
    pub(crate) fn new(plan: Plan) -> Self {
        Self {
            plan,
            first_look: Instant::now(),
            phase: Phase::Waiting,
            transitions: Vec::new(),
            count: 0,
        }
    }

    /// Takes the observation just made.
    pub(crate) fn feed(&mut self, o: Observation) -> Next {
        let now = Instant::now();
        self.count += 1;
        if self
            .transitions
            .last()
            .is_none_or(|(_, prev)| prev.ok != o.ok)
        {
            self.transitions.push((now, o.clone()));
        }
        let p = self.plan;
        match self.phase.clone() {
            Phase::Waiting if o.ok => {
                let became = o.since.unwrap_or(now).max(p.start);
                match p.stable_for {
                    Some(s) => {
                        let end = now.max(became) + s;
                        self.phase = Phase::Stable {
                            became,
                            text: o.text,
                            end,
                        };
                        self.wait_stable(now, end)
                    }
                    None => self.held(became, o.text),
                }
            }
            Phase::Waiting => {
                let limit = match (p.within, p.late) {
                    (Some(w), Some(l)) if l > w => Some(p.start + l),
                    (Some(w), _) => Some(p.start + w),
                    (None, _) => None,
                };
                match limit {
                    Some(l) if now < l => Next::Wait(p.poll.min(l - now)),
                    Some(l) if self.count == 1 && self.first_look >= l => self.done(
                        Outcome::Unjudged {
                            last: o.text.clone(),
                            first_look: self.first_look - p.start,
                        },
                        o.text,
                    ),
                    _ => self.done(
                        Outcome::Never {
                            last: o.text.clone(),
                        },
                        o.text,
                    ),
                }
            }
            Phase::Stable { became, .. } if !o.ok => self.done(
                Outcome::Broke {
                    took: became - p.start,
                    after: now - became,
                    observed: o.text.clone(),
                },
                o.text,
            ),
            Phase::Stable { became, text, end } => {
                if now >= end {
                    self.held(became, text)
                } else {
                    self.wait_stable(now, end)
                }
            }
        }
    }

    fn wait_stable(&self, now: Instant, end: Instant) -> Next {
        Next::Wait(
            self.plan
                .stable_poll
                .min(end.saturating_duration_since(now)),
        )
    }

    fn held(&mut self, became: Instant, text: String) -> Next {
        let p = self.plan;
        let took = became - p.start;
        // Late (non-strict) only against a bound the proxy declared, i.e. a `late` limit past
        // `within`; without one, what held while the window was being watched is held.
        let late = match (p.within, p.late) {
            (Some(w), Some(l)) if l > w => became > (p.start + w).max(self.first_look),
            _ => false,
        };
        let outcome = if late {
            Outcome::Late { took }
        } else {
            Outcome::Held { took }
        };
        self.done(outcome, text)
    }

    fn done(&mut self, outcome: Outcome, last: String) -> Next {
        Next::Done(Evaluation {
            outcome,
            transitions: std::mem::take(&mut self.transitions),
            observations: self.count,
            last,
        })
    }
}

#[cfg(test)]
mod tests;
