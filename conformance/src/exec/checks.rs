//! `expect` steps: what each check observes (one observation per call, repeated by the
//! within/stable_for evaluation), what a correct proxy shows, and the graded `CheckResult`.

use std::collections::BTreeSet;
use std::time::Duration;

use agent_sim::ca::ClientIdentity;
use reports::{CheckResult, EventKind, TimelineEvent, Verdict};
use scenarios::{Check, Expectation, Identity, Outcome as Expected, Requirement, RootRef};
use tokio::time::Instant;

use super::usage::{self, UsageSpec};
use super::wait::{Evaluator, Next, Observation, Outcome, Plan};
use super::{BOUND_SLACK, Exec, LEAF_PROBE_SERVICE, describe_identity};
use crate::error::Error;
use crate::probe::{self, HttpProbe, Inbound};
use crate::tls;

/// Observation transitions put on the timeline per check, at most.
const MAX_TRANSITIONS: usize = 12;

/// A resolved `within`: the bound, and how long to keep measuring past it (non-strict).
#[derive(Debug, Clone, Copy)]
struct Within {
    bound: Duration,
    late: Option<Duration>,
}

impl Exec<'_> {
    /// Evaluates one expectation and records its result.
    pub(super) async fn expect(&mut self, exp: &Expectation) -> Result<(), Error> {
        self.validate(&exp.check)?;
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
            | Check::Http {
                identity: Some(identity),
                conn: None,
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

    /// References a check makes must exist (a scenario bug otherwise, not a proxy failure).
    fn validate(&self, check: &Check) -> Result<(), Error> {
        match check {
            Check::Upstream { upstream, .. }
            | Check::UpstreamRefused { upstream }
            | Check::ListenerOpen { upstream }
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

    async fn observe(&mut self, check: &Check, material: Option<&ClientIdentity>) -> Observation {
        let inbound = self.world.inbound_addr();
        match check {
            Check::Inbound { outcome, .. } => {
                let seen = probe::inbound(inbound, material, &self.world.app).await;
                let ok = match outcome {
                    Expected::Allowed => matches!(seen, Inbound::Allowed { .. }),
                    Expected::Refused => matches!(seen, Inbound::Refused { .. }),
                };
                Observation::new(ok, seen.to_string())
            }
            Check::Http {
                conn,
                method,
                path,
                headers,
                status,
                ..
            } => {
                let req = HttpProbe {
                    method: method.clone().unwrap_or_else(|| "GET".into()),
                    path: path.clone(),
                    headers: headers.clone(),
                };
                let got = match conn {
                    Some(c) => match self.conns.get_mut(c) {
                        Some(c) => c.http(&req).await,
                        None => Err(format!("connection {c} was never established")),
                    },
                    None => probe::http_one_shot(inbound, material, &req).await,
                };
                match got {
                    Ok(s) => Observation::new(s == *status, format!("HTTP {s}")),
                    Err(e) => Observation::new(false, e),
                }
            }
            Check::ConnOpen { conn } => match self.conns.get_mut(conn) {
                None => Observation::new(false, format!("connection {conn} was never established")),
                Some(c) => match c.check_open().await {
                    Ok(ms) => Observation::new(true, format!("round trip in {ms} ms")),
                    Err(e) => Observation::new(false, format!("not usable: {e}")),
                },
            },
            Check::ConnClosed { conn } => match self.conns.get(conn) {
                None => Observation::new(false, format!("connection {conn} was never established")),
                Some(c) => match c.closed() {
                    Some((at, how)) => Observation {
                        ok: true,
                        text: how,
                        since: Some(at),
                    },
                    None => Observation::new(false, "open (no close seen)"),
                },
            },
            Check::ServedLeaf {
                service,
                root,
                differs_from_mark,
            } => {
                self.observe_leaf(material, service, *root, differs_from_mark.as_deref())
                    .await
            }
            Check::Upstream {
                upstream,
                reach,
                all,
                presented,
            } => {
                self.observe_upstream(upstream, reach, *all, presented)
                    .await
            }
            Check::UpstreamRefused { upstream } => {
                let Some(addr) = self.world.upstream_addr(upstream) else {
                    return Observation::new(false, "no such upstream");
                };
                let attempt = probe::upstream_once(addr).await;
                tokio::time::sleep(Duration::from_millis(100)).await;
                match (self.world.instances.who_saw(&attempt.token), attempt.answer) {
                    (Some((i, _)), _) => {
                        Observation::new(false, format!("bytes reached instance {}", i.id))
                    }
                    (None, Ok(id)) => Observation::new(false, format!("answered {id:?}")),
                    (None, Err(e)) => {
                        Observation::new(true, format!("no instance received bytes ({e})"))
                    }
                }
            }
            Check::ListenerOpen { upstream } => {
                let Some(addr) = self.world.upstream_addr(upstream) else {
                    return Observation::new(false, "no such upstream");
                };
                match probe::listener_open(addr).await {
                    Ok(()) => Observation::new(true, format!("{addr} accepts connections")),
                    Err(e) => Observation::new(false, format!("{addr}: {e}")),
                }
            }
            Check::AgentUsage {
                token_on_every_request,
                blocking,
                max_requests_per_minute,
            } => {
                let log = self.world.control().request_log();
                let spec = UsageSpec {
                    token_on_every_request: *token_on_every_request,
                    blocking,
                    max_requests_per_minute: *max_requests_per_minute,
                };
                let window = self.last_mark.at.elapsed();
                usage::agent_usage(
                    &log,
                    self.last_mark.log_seq,
                    window,
                    &self.world.token,
                    spec,
                )
            }
            Check::IndexResetHonoured => {
                let log = self.world.control().request_log();
                usage::index_reset_honoured(&log, self.last_mark.log_seq)
            }
        }
    }

    async fn observe_leaf(
        &mut self,
        material: Option<&ClientIdentity>,
        service: &str,
        root: RootRef,
        differs_from: Option<&str>,
    ) -> Observation {
        let chain = match probe::served_chain(self.world.inbound_addr(), material).await {
            Ok(c) => c,
            Err(e) => return Observation::new(false, format!("no certificate served: {e}")),
        };
        let Some(leaf) = chain.first() else {
            return Observation::new(false, "an empty chain");
        };
        let roots = agent_sim::play::roots(self.world.control());
        let mut problems = Vec::new();
        let uris = tls::uri_sans(leaf);
        let uri = uris.first().cloned().unwrap_or_default();
        match tls::spiffe_service(&uri) {
            Some((td, svc)) => {
                if svc != service {
                    problems.push(format!("names svc/{svc}, not svc/{service}"));
                }
                if !td.eq_ignore_ascii_case(&roots.trust_domain) {
                    problems.push(format!("trust domain {td}, not {}", roots.trust_domain));
                }
            }
            None => problems.push(format!("no Consul service SPIFFE ID (URI SANs {uris:?})")),
        }
        let (pems, which) = match root {
            RootRef::Active => (vec![roots.active_pem.clone()], "the active root"),
            RootRef::AnyListed => (roots.pems.clone(), "a listed root"),
        };
        if let Err(e) = tls::verify_chain(&chain, &pems) {
            problems.push(format!("does not chain to {which}: {e}"));
        }
        if let Some(m) = differs_from {
            match self.marks.get(m).map(|m| m.leaf.as_deref()) {
                Some(Some(old)) if old == leaf.as_ref() => {
                    problems.push(format!("still the leaf served at {m}"));
                }
                Some(Some(_)) => {}
                _ => problems.push(format!("no leaf was captured at {m}")),
            }
        }
        let serial = tls::serial(leaf);
        if problems.is_empty() {
            Observation::new(true, format!("leaf {serial} for {uri}, chains to {which}"))
        } else {
            Observation::new(false, format!("leaf {serial}: {}", problems.join("; ")))
        }
    }

    async fn observe_upstream(
        &mut self,
        upstream: &str,
        reach: &[String],
        all: bool,
        presented: &str,
    ) -> Observation {
        let Some(addr) = self.world.upstream_addr(upstream) else {
            return Observation::new(false, "no such upstream");
        };
        let tries = if all { (reach.len() * 4).max(6) } else { 1 };
        let mut reached = BTreeSet::new();
        for n in 1..=tries {
            let attempt = probe::upstream_once(addr).await;
            if let Err(e) = &attempt.answer {
                let hints: Vec<String> = self
                    .world
                    .instances
                    .iter()
                    .filter_map(|i| i.failures().pop().map(|f| format!("{}: {f}", i.id)))
                    .collect();
                let hint = if hints.is_empty() {
                    String::new()
                } else {
                    format!(" [instances: {}]", hints.join("; "))
                };
                return Observation::new(false, format!("no instance answered: {e}{hint}"));
            }
            let Some((inst, seen)) = self.world.instances.who_saw(&attempt.token) else {
                return Observation::new(
                    false,
                    format!("answer {:?} from no known instance", attempt.answer),
                );
            };
            if !reach.contains(&inst.id) {
                return Observation::new(
                    false,
                    format!("reached {}, not one of {reach:?}", inst.id),
                );
            }
            let svc = seen
                .presented
                .as_deref()
                .and_then(tls::spiffe_service)
                .map(|(_, s)| s);
            if svc.as_deref() != Some(presented) {
                return Observation::new(
                    false,
                    format!("{} saw the proxy present {:?}", inst.id, seen.presented),
                );
            }
            reached.insert(inst.id.clone());
            if !all {
                return Observation::new(true, format!("reached {} as svc/{presented}", inst.id));
            }
            if reach.iter().all(|r| reached.contains(r)) {
                return Observation::new(
                    true,
                    format!("reached all of {reach:?} in {n} connections"),
                );
            }
        }
        Observation::new(
            false,
            format!("reached only {reached:?} in {tries} connections"),
        )
    }
}

/// What a correct proxy shows, in words.
fn expected(exp: &Expectation, within: Option<Within>, stable: Option<Duration>) -> String {
    let mut text = match &exp.check {
        Check::Inbound { identity, outcome } => match outcome {
            Expected::Allowed => format!(
                "{}'s bytes reach the app and come back",
                describe_identity(identity)
            ),
            Expected::Refused => format!(
                "{} refused (handshake fails or the connection closes before any byte reaches the app)",
                describe_identity(identity)
            ),
        },
        Check::Http {
            identity,
            conn,
            method,
            path,
            status,
            ..
        } => {
            let who = match (conn, identity) {
                (Some(c), _) => format!("on connection {c}"),
                (None, Some(i)) => format!("as {}", describe_identity(i)),
                (None, None) => String::new(),
            };
            format!(
                "{} {path} {who} answers HTTP {status}",
                method.as_deref().unwrap_or("GET")
            )
        }
        Check::ConnOpen { conn } => format!("connection {conn} still carries bytes both ways"),
        Check::ConnClosed { conn } => format!("connection {conn} closed by the proxy"),
        Check::ServedLeaf {
            service,
            root,
            differs_from_mark,
        } => {
            let r = match root {
                RootRef::Active => "the active root",
                RootRef::AnyListed => "a listed root",
            };
            let mut t = format!("serves a leaf for svc/{service} chaining to {r}");
            if let Some(m) = differs_from_mark {
                t.push_str(&format!(", not the one served at {m}"));
            }
            t
        }
        Check::Upstream {
            upstream,
            reach,
            all,
            presented,
        } => format!(
            "bytes to upstream {upstream} reach {} of {reach:?}, presenting svc/{presented}",
            if *all { "every one" } else { "one" }
        ),
        Check::UpstreamRefused { upstream } => {
            format!("no byte through upstream {upstream} reaches any instance")
        }
        Check::ListenerOpen { upstream } => {
            format!("the local listener of upstream {upstream} accepts connections")
        }
        Check::AgentUsage {
            token_on_every_request,
            blocking,
            max_requests_per_minute,
        } => {
            let mut parts = Vec::new();
            if *token_on_every_request {
                parts.push("the token on every request".to_owned());
            }
            if !blocking.is_empty() {
                parts.push(format!("blocking queries for {}", blocking.join(", ")));
            }
            if let Some(m) = max_requests_per_minute {
                parts.push(format!("at most {m} requests/min"));
            }
            format!("agent usage: {}", parts.join(", "))
        }
        Check::IndexResetHonoured => {
            "after the index reset the proxy sends a smaller index and keeps blocking".into()
        }
    };
    if let (Some(w), Some(name)) = (within, &exp.within) {
        text.push_str(&format!(" within {name} ({} ms)", w.bound.as_millis()));
    }
    if let Some(s) = stable {
        text.push_str(&format!(", then for {} ms", s.as_millis()));
    }
    text
}
