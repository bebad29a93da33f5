//! Plays a scenario's steps in order against a ready proxy: agent-side steps through
//! `agent_sim::play`, harness-side ones here (issue, open, mark, idle), and `expect` steps as
//! checks (`checks`), evaluated with `within`/`stable_for` (`wait`). Everything lands on the
//! scenario's timeline.

mod app_seen;
mod chain_check;
mod checks;
mod expected;
mod observe;
mod proxy_log;
mod route;
mod streams;
mod transparent;
mod usage;
mod wait;

pub(crate) use self::usage::{NOT_FOR_XDS, only_request_log_checks};

use std::collections::BTreeMap;
use std::time::Duration;

use agent_sim::ca::{ClientIdentity, Forgery};
use agent_sim::duration::GoDuration;
use reports::{CheckResult, EventKind, TimelineEvent};
use scenarios::{Identity, Step, Timeouts};
use tokio::time::Instant;

use crate::error::Error;
use crate::manifest::Bounds;
use crate::probe::{self, Conn};
use crate::proxy::OutputRing;
use crate::world::World;

/// Slack added to a proxy's declared bounds for scheduling and propagation on a busy machine.
pub const BOUND_SLACK: Duration = Duration::from_millis(1000);

/// Probe identities are issued afresh after this long (scenarios may use leaf TTLs of a few
/// seconds).
const IDENTITY_MAX_AGE: Duration = Duration::from_secs(1);

/// The service name of the leaf probes use to look at the served certificate.
const LEAF_PROBE_SERVICE: &str = "conformance-probe";

/// A named moment: when, the request log position, the leaf served then.
#[derive(Debug, Clone)]
struct Mark {
    at: Instant,
    log_seq: u64,
    leaf: Option<Vec<u8>>,
}

/// The executor of one scenario.
pub(crate) struct Exec<'w> {
    world: &'w mut World,
    timeouts: &'w Timeouts,
    bounds: Bounds,
    started: Instant,
    /// When the last state-changing step completed (where "within" clocks start).
    trigger: Instant,
    pub(crate) timeline: Vec<TimelineEvent>,
    pub(crate) checks: Vec<CheckResult>,
    conns: BTreeMap<String, Conn>,
    /// `open-upstream` connections from the app, with their protocol.
    upstream_conns: BTreeMap<String, (probe::L7Conn, scenarios::AppProtocol)>,
    named: BTreeMap<String, ClientIdentity>,
    cache: BTreeMap<String, (Instant, Option<ClientIdentity>)>,
    marks: BTreeMap<String, Mark>,
    last_mark: Mark,
    /// The proxy's captured output streams (for `proxy-log` checks; none in unit tests).
    output: Vec<&'w OutputRing>,
    /// The conformance binary (`{exe}`), for dials made as another UID (`conformance dial`).
    exe: Option<&'w std::path::Path>,
}

impl<'w> Exec<'w> {
    /// An executor for a world whose proxy became ready now; `started` is the scenario's
    /// time origin. The initial mark (for `agent-usage` without a `mark`) is now.
    pub(crate) fn new(
        world: &'w mut World,
        timeouts: &'w Timeouts,
        bounds: Bounds,
        started: Instant,
    ) -> Self {
        let now = Instant::now();
        let log_seq = last_seq(world);
        Self {
            world,
            timeouts,
            bounds,
            started,
            trigger: now,
            timeline: Vec::new(),
            checks: Vec::new(),
            conns: BTreeMap::new(),
            upstream_conns: BTreeMap::new(),
            named: BTreeMap::new(),
            cache: BTreeMap::new(),
            marks: BTreeMap::new(),
            last_mark: Mark {
                at: now,
                log_seq,
                leaf: None,
            },
            output: Vec::new(),
            exe: None,
        }
    }

    /// This executor running `exe` (the conformance binary) for dials as another UID.
    pub(crate) fn with_exe(mut self, exe: &'w std::path::Path) -> Self {
        self.exe = Some(exe);
        self
    }

    /// This executor reading the proxy's output from `streams` (stdout, stderr).
    pub(crate) fn with_output(mut self, streams: [&'w OutputRing; 2]) -> Self {
        self.output = streams.to_vec();
        self
    }

    /// Milliseconds since the scenario started.
    pub(crate) fn ms(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.started).as_millis()).unwrap_or(u64::MAX)
    }

    pub(crate) fn event(
        &mut self,
        kind: EventKind,
        label: impl Into<String>,
    ) -> &mut TimelineEvent {
        let at = self.ms(Instant::now());
        self.timeline.push(TimelineEvent::new(at, kind, label));
        let last = self.timeline.len() - 1;
        &mut self.timeline[last]
    }

    /// Plays every step; a harness error stops the scenario.
    pub(crate) async fn run(&mut self, steps: &[Step]) -> Result<(), Error> {
        for step in steps {
            self.step(step).await?;
        }
        Ok(())
    }

    async fn step(&mut self, step: &Step) -> Result<(), Error> {
        match step {
            Step::Expect(exp) => self.expect(exp).await,
            Step::Issue { name, service } => {
                let id = self.world.control().issue_identity(service)?;
                self.named.insert(name.clone(), id);
                let mark = self.mark_now().await;
                self.marks.insert(name.clone(), mark);
                self.event(EventKind::Step, format!("issue {name} ({service})"));
                Ok(())
            }
            Step::Open {
                conn,
                identity,
                protocol,
            } => {
                let who = self.identity(identity)?;
                let opened = Conn::open(self.world.inbound_addr(), who.as_ref(), *protocol).await;
                let label = format!("open {conn} as {}", describe_identity(identity));
                let mut ev = TimelineEvent::new(self.ms(Instant::now()), EventKind::Step, label);
                ev = match opened {
                    Ok(c) => {
                        self.conns.insert(conn.clone(), c);
                        ev.ok(true)
                    }
                    Err(e) => ev.detail(format!("not established: {e}")).ok(false),
                };
                self.timeline.push(ev);
                Ok(())
            }
            Step::Mark { name } => {
                let mark = self.mark_now().await;
                self.last_mark = mark.clone();
                self.marks.insert(name.clone(), mark);
                self.trigger = Instant::now();
                self.event(EventKind::Step, format!("mark {name}"));
                Ok(())
            }
            Step::Idle { duration, reason } => {
                let d = self.duration(duration)?;
                self.event(EventKind::Step, format!("idle {} ms", d.as_millis()))
                    .detail = Some(reason.clone());
                tokio::time::sleep(d).await;
                Ok(())
            }
            Step::Instance { instance, answer } => self.set_answer(instance, answer),
            Step::App { answer } => {
                let delay = match &answer.delay {
                    Some(d) => Some(self.duration(d)?),
                    None => None,
                };
                self.world.app.behave(delay, answer.blackhole).await;
                self.event(EventKind::Step, format!("the local app answers {answer:?}"));
                Ok(())
            }
            Step::OpenUpstream {
                conn,
                upstream,
                protocol,
            } => self.open_upstream(conn, upstream, *protocol).await,
            Step::AddInstance(spec) => {
                self.world.start_instance(spec).await?;
                self.agent_step(step).await
            }
            Step::JwtRotate { provider } => {
                let label = self.world.jwt.rotate(provider)?;
                self.trigger = Instant::now();
                self.event(EventKind::Step, label);
                Ok(())
            }
            _ => self.agent_step(step).await,
        }
    }

    async fn agent_step(&mut self, step: &Step) -> Result<(), Error> {
        let control = self.world.control().clone();
        let label = self.world.play.apply_step(&control, step).await?;
        if matches!(step, Step::RotateCa { .. } | Step::RotateIntermediate) {
            // Service leaves and forgeries come from the active root: issue them afresh.
            self.cache.clear();
        }
        let kind = match step {
            Step::Fault { .. }
            | Step::ClearFaults
            | Step::RestartAgent { .. }
            | Step::IndexReset => EventKind::Fault,
            _ => EventKind::Step,
        };
        if let Some(label) = label {
            self.event(kind, label);
        }
        self.trigger = Instant::now();
        Ok(())
    }

    async fn mark_now(&mut self) -> Mark {
        let leaf = match self.identity(&Identity::Service {
            service: LEAF_PROBE_SERVICE.into(),
        }) {
            Ok(id) => probe::served_chain(self.world.inbound_addr(), id.as_ref())
                .await
                .ok()
                .and_then(|c| c.first().map(|l| l.to_vec())),
            Err(_) => None,
        };
        Mark {
            at: Instant::now(),
            log_seq: last_seq(self.world),
            leaf,
        }
    }

    /// Client material for `identity` (`None` = no certificate); cached for a second, and
    /// until a CA rotation.
    fn identity(&mut self, identity: &Identity) -> Result<Option<ClientIdentity>, Error> {
        if let Identity::Named { name } = identity {
            return self
                .named
                .get(name)
                .cloned()
                .map(Some)
                .ok_or_else(|| Error::Step(format!("identity {name:?} was never issued")));
        }
        let key = format!("{identity:?}");
        if let Some((at, hit)) = self.cache.get(&key)
            && at.elapsed() < IDENTITY_MAX_AGE
        {
            return Ok(hit.clone());
        }
        let c = self.world.control();
        let material = match identity {
            Identity::Service { service } => Some(c.issue_identity(service)?),
            Identity::UntrustedCa { service } => Some(c.forge(&Forgery::UntrustedCa {
                service: service.clone(),
            })?),
            Identity::ForeignTrustDomain { service } => {
                Some(c.forge(&Forgery::ForeignTrustDomain {
                    service: service.clone(),
                })?)
            }
            Identity::Expired { service } => Some(c.forge(&Forgery::Expired {
                service: service.clone(),
            })?),
            Identity::NoSpiffe => Some(c.forge(&Forgery::NoSpiffe {
                common_name: "web".into(),
            })?),
            Identity::AgentId => Some(c.forge(&Forgery::AgentId {
                node: "node-1".into(),
            })?),
            Identity::CommonNameMismatch {
                common_name,
                service,
            } => Some(c.forge(&Forgery::CommonNameMismatch {
                common_name: common_name.clone(),
                service: service.clone(),
            })?),
            Identity::SelfSigned { service } => Some(c.forge(&Forgery::SelfSigned {
                service: service.clone(),
            })?),
            Identity::NoCert => None,
            Identity::Named { .. } => None,
        };
        self.cache.insert(key, (Instant::now(), material.clone()));
        Ok(material)
    }

    /// A named timeout or a Go duration.
    fn duration(&self, text: &str) -> Result<Duration, Error> {
        resolve_duration(self.timeouts, text)
    }
}

/// A named timeout or a Go duration.
pub(crate) fn resolve_duration(timeouts: &Timeouts, text: &str) -> Result<Duration, Error> {
    timeouts
        .get(text)
        .or_else(|| GoDuration::parse(text).ok().map(GoDuration::to_std))
        .ok_or_else(|| {
            Error::Step(format!(
                "{text:?} is neither a named timeout nor a duration"
            ))
        })
}

fn last_seq(world: &World) -> u64 {
    world.control().request_log().last().map_or(0, |e| e.seq)
}

/// How an identity reads in reports.
pub(crate) fn describe_identity(identity: &Identity) -> String {
    match identity {
        Identity::Service { service } => service.clone(),
        Identity::Named { name } => format!("identity {name}"),
        Identity::UntrustedCa { service } => format!("{service} (untrusted CA)"),
        Identity::ForeignTrustDomain { service } => format!("{service} (foreign trust domain)"),
        Identity::Expired { service } => format!("{service} (expired leaf)"),
        Identity::NoSpiffe => "a certificate without SPIFFE ID".into(),
        Identity::AgentId => "an agent SPIFFE ID".into(),
        Identity::CommonNameMismatch {
            common_name,
            service,
        } => format!("{service} with CN {common_name}"),
        Identity::SelfSigned { service } => format!("{service} (self-signed)"),
        Identity::NoCert => "no client certificate".into(),
    }
}
