//! `expect` steps: the check's plan (named `within`, `stable_for`, the proxy's declared
//! bounds for `reauth`), the driver loop over observations (`observe`), and the graded
//! `CheckResult` with its timeline events.

use std::time::Duration;

use reports::{CheckResult, EventKind, TimelineEvent, Verdict};
use scenarios::{Check, Expectation, Identity, Requirement};
use tokio::time::Instant;

use super::expected::expected;
use super::usage;
use super::wait::{Evaluator, Next, Outcome, Plan};
use super::{BOUND_SLACK, Exec, LEAF_PROBE_SERVICE};
use crate::error::Error;

/// Observation transitions put on the timeline per check, at most.
const MAX_TRANSITIONS: usize = 12;

/// A resolved `within`: the bound, and how long to keep measuring past it (non-strict).
#[derive(Debug, Clone, Copy)]
pub(super) struct Within {
    pub(super) bound: Duration,
    pub(super) late: Option<Duration>,
}

impl Exec<'_> {
    /// Evaluates one expectation and records its result.
    pub(super) async fn expect(&mut self, exp: &Expectation) -> Result<(), Error> {
        self.validate(&exp.check)?;
        if self.world.xds.is_some() && usage::reads_request_log(&exp.check) {
            self.not_for_xds(exp, usage::NOT_FOR_XDS);
            return Ok(());
        }
        if self.world.xds.is_some() && matches!(exp.check, Check::ProxyLog { .. }) {
            self.not_for_xds(exp, super::proxy_log::NOT_FOR_XDS);
            return Ok(());
        }
        let within = exp.within.as_deref().map(|w| self.within(w)).transpose()?;
        let stable = exp
            .stable_for
            .as_deref()
            .map(|d| self.duration(d))
            .transpose()?;
        let mut plan = Plan::new(self.trigger, within.map(|w| w.bound), stable);
        plan.late = within.and_then(|w| w.late);
        let material = match &exp.check {
            Check::Inbound { identity, .. }
            | Check::TlsHandshake { identity, .. }
            | Check::Http {
                identity: Some(identity),
                conn: None,
                ..
            }
            | Check::Grpc {
                identity: Some(identity),
                conn: None,
                upstream: None,
                ..
            } => self.identity(identity)?,
            Check::ServedLeaf { .. } => self.identity(&Identity::Service {
                service: LEAF_PROBE_SERVICE.into(),
            })?,
            _ => None,
        };
        let mut evaluator = Evaluator::new(plan);
        let eval = loop {
            let o = self.observe(&exp.check, material.as_ref()).await;
            match evaluator.feed(o) {
                Next::Wait(d) => tokio::time::sleep(d).await,
                Next::Done(e) => break e,
            }
        };
        for (at, o) in eval.transitions.iter().take(MAX_TRANSITIONS) {
            let ev = TimelineEvent::new(self.ms(*at), EventKind::Observation, &exp.name)
                .detail(o.text.clone())
                .ok(o.ok);
            self.timeline.push(ev);
        }
        let requirement = match exp.requirement {
            Requirement::Must => reports::Requirement::Must,
            Requirement::Should | Requirement::Info => reports::Requirement::Should,
        };
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let (mut verdict, observed, took) = match &eval.outcome {
            Outcome::Held { took } => {
                let text = match stable {
                    Some(s) => format!(
                        "{} (then stable for {} ms, {} observations)",
                        eval.last,
                        ms(s),
                        eval.observations
                    ),
                    None => eval.last.clone(),
                };
                (Verdict::Pass, text, Some(ms(*took)))
            }
            Outcome::Late { took } => (
                Verdict::NonStrict,
                format!(
                    "{} after {} ms: within the proxy's declared lifetime bound, above the \
                     scenario's cap of {} ms",
                    eval.last,
                    ms(*took),
                    within.map_or(0, |w| ms(w.bound))
                ),
                Some(ms(*took)),
            ),
            Outcome::Unjudged { last, first_look } => (
                Verdict::Skipped,
                format!(
                    "cannot be judged: its window of {} ms from the step had passed when it was \
                     first looked at ({} ms, the checks before it used the window); seen then: \
                     {last}",
                    within.map_or(0, |w| ms(w.late.unwrap_or(w.bound).max(w.bound))),
                    ms(*first_look)
                ),
                None,
            ),
            Outcome::Never { last } => {
                let text = match within {
                    Some(w) => format!(
                        "still {last} after {} ms ({} observations)",
                        ms(w.late.unwrap_or(w.bound).max(w.bound)),
                        eval.observations
                    ),
                    None => last.clone(),
                };
                (Verdict::Fail, text, None)
            }
            Outcome::Broke {
                took,
                after,
                observed,
            } => (
                Verdict::Fail,
                format!(
                    "held after {} ms, but {} ms later: {observed}",
                    ms(*took),
                    ms(*after)
                ),
                Some(ms(*took)),
            ),
        };
        let observed = if exp.requirement == Requirement::Info {
            verdict = Verdict::Pass;
            format!("informational: {observed}")
        } else {
            observed
        };
        let at = self.ms(Instant::now());
        let mut result = CheckResult::new(
            &exp.name,
            requirement,
            verdict,
            expected(exp, within, stable),
            observed,
        )
        .at(at);
        if let Some(w) = within {
            result = result.within(took, ms(w.bound));
        }
        self.timeline.push(
            TimelineEvent::new(at, EventKind::Check, &exp.name)
                .detail(format!("{}: {}", verdict, result.observed))
                .ok(verdict == Verdict::Pass),
        );
        self.checks.push(result);
        Ok(())
    }

    /// Records `exp` as not supported for an xDS proxy, saying `why` (e.g.
    /// [`usage::NOT_FOR_XDS`]).
    fn not_for_xds(&mut self, exp: &Expectation, why: &str) {
        let at = self.ms(Instant::now());
        let requirement = match exp.requirement {
            Requirement::Must => reports::Requirement::Must,
            Requirement::Should | Requirement::Info => reports::Requirement::Should,
        };
        let result = CheckResult::new(
            &exp.name,
            requirement,
            Verdict::NotSupported,
            expected(exp, None, None),
            why,
        )
        .at(at);
        self.timeline.push(
            TimelineEvent::new(at, EventKind::Check, &exp.name).detail(format!(
                "{}: {}",
                Verdict::NotSupported,
                why
            )),
        );
        self.checks.push(result);
    }

    /// References a check makes must exist (a scenario bug otherwise, not a proxy failure).
    fn validate(&self, check: &Check) -> Result<(), Error> {
        match check {
            Check::Upstream {
                upstream,
                via: scenarios::UpstreamVia::VirtualIp,
                ..
            } if !self.world.play.implicit_upstreams().contains(upstream) => {
                return Err(Error::Step(format!(
                    "upstream {upstream:?} is not an implicit upstream of the setup"
                )));
            }
            Check::Upstream {
                via: scenarios::UpstreamVia::VirtualIp,
                ..
            } => {}
            Check::Upstream { upstream, .. }
            | Check::UpstreamRefused { upstream }
            | Check::ListenerOpen { upstream }
            | Check::Request(scenarios::RequestCheck { upstream, .. })
            | Check::Spread(scenarios::SpreadCheck { upstream, .. })
            | Check::Burst(scenarios::BurstCheck { upstream, .. })
                if self.world.upstream_addr(upstream).is_none() =>
            {
                return Err(Error::Step(format!(
                    "upstream {upstream:?} is not in the setup"
                )));
            }
            Check::ServedLeaf {
                differs_from_mark: Some(m),
                ..
            } if !self.marks.contains_key(m) => {
                return Err(Error::Step(format!(
                    "no mark or issue named {m:?} before this check"
                )));
            }
            _ => {}
        }
        Ok(())
    }

    fn within(&self, text: &str) -> Result<Within, Error> {
        if text == "query-poll" {
            // A proxy that declares its prepared-query poll interval is given that long.
            let cap = self.duration("query-poll")?;
            return Ok(Within {
                bound: self
                    .bounds
                    .query_poll_ms
                    .map_or(cap, |q| Duration::from_millis(q) + BOUND_SLACK),
                late: None,
            });
        }
        if text != "reauth" {
            return Ok(Within {
                bound: self.duration(text)?,
                late: None,
            });
        }
        let cap = self.duration("reauth")?;
        let ms = Duration::from_millis;
        Ok(
            match (self.bounds.reauthorize_ms, self.bounds.max_lifetime_ms) {
                (Some(r), _) => Within {
                    bound: ms(r) + BOUND_SLACK,
                    late: None,
                },
                (None, Some(l)) if ms(l) + BOUND_SLACK > cap => Within {
                    bound: cap,
                    late: Some(ms(l) + BOUND_SLACK),
                },
                (None, Some(l)) => Within {
                    bound: ms(l) + BOUND_SLACK,
                    late: None,
                },
                (None, None) => Within {
                    bound: cap,
                    late: None,
                },
            },
        )
    }
}
