//! Plays the agent side of a scenario (`scenarios` model) on a simulated agent: the setup
//! (service-defaults, config entries, intentions (with `db -> <name>` allow for each implicit
//! upstream), the `db` registration with its sidecar, the upstream instances' catalog
//! registrations) and the agent-side steps of the timeline
//! (intentions, config entries, CA rotation, faults, index reset, restart, health, instances,
//! re-registration with another upstream). Harness-side steps (probes, marks, idling) are not
//! played here: `apply_step` answers `None` for them.
//!
//! Shared by the conformance runner and `agent-sim --scenario`, so both set up exactly the same
//! world. Names it registers: service `db` (ID `db`) with sidecar `db-sidecar-proxy`; instance
//! `<id>` of service `<svc>` as `<svc>-sidecar-proxy` on node `node-<id>` with check
//! `<id>-health`.

use std::collections::BTreeMap;
use std::time::Duration;

use scenarios::{InstanceSpec, Policy, Setup, Step, Timeouts};
use serde_json::{Value, json};

use crate::state::agent_tls::ServerCert;
use crate::state::control::Control;
use crate::state::faults::FaultGuard;
use crate::state::store::CheckUpdate;

use self::error::sim;
use self::translate::{action, fault_name, put_intention, text, to_fault};

/// The service the proxy under test fronts.
pub const SERVICE: &str = "db";
/// Its sidecar's service ID (what `-proxy-id` names).
pub const PROXY_ID: &str = "db-sidecar-proxy";
/// Consul's default `TransparentProxy.OutboundListenerPort`.
pub const DEFAULT_OUTBOUND_PORT: u16 = 15001;
const LOOPBACK: &str = "127.0.0.1";

/// Loopback ports the harness picked for one scenario.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ports {
    /// The application behind the proxy (`db`'s `Port`, the sidecar's `LocalServicePort`).
    pub app: u16,
    /// The sidecar's public (inbound) listener.
    pub inbound: u16,
    /// `LocalBindPort` of each upstream, by name (initial and later ones).
    pub upstreams: BTreeMap<String, u16>,
    /// Port of each harness-run instance, by instance id.
    pub instances: BTreeMap<String, u16>,
    /// Address of `db` and its sidecar (`127.0.0.1` when `None`).
    pub service_address: Option<String>,
    /// Address the instances are registered with (`127.0.0.1` when `None`; an instance's
    /// `hostname` wins).
    pub instance_address: Option<String>,
    /// The app's unix socket (`db`'s `SocketPath`, the sidecar's `LocalServiceSocketPath`),
    /// for `setup.app_socket`.
    pub app_socket: Option<String>,
    /// `LocalBindSocketPath` of each upstream with `socket = true`, by name.
    pub upstream_sockets: BTreeMap<String, String>,
}

/// The agent side of one scenario: what has been registered so far and the faults it holds.
#[derive(Debug)]
pub struct Play {
    setup: Setup,
    ports: Ports,
    knobs: BTreeMap<String, Value>,
    timeouts: Timeouts,
    upstreams: Vec<String>,
    instances: Vec<InstanceSpec>,
    faults: Vec<FaultGuard>,
}

// === impl Play ===

impl Play {
    /// A player for `setup`. `knobs` are the proxy's own `Proxy.Config` keys (from its
    /// manifest); the setup's `proxy_config` is laid over them. `timeouts` resolve named
    /// durations in steps (`for`, `down_for`).
    pub fn new(
        setup: &Setup,
        ports: Ports,
        knobs: BTreeMap<String, Value>,
        timeouts: Timeouts,
    ) -> Self {
        Self {
            upstreams: setup
                .upstreams
                .iter()
                .filter(|u| u.initial && !u.implicit)
                .map(|u| u.name.clone())
                .collect(),
            instances: setup.instances.clone(),
            setup: setup.clone(),
            ports,
            knobs,
            timeouts,
            faults: Vec::new(),
        }
    }

    /// The ports in use.
    pub fn ports(&self) -> &Ports {
        &self.ports
    }

    /// Records the port of an instance started later (before its `add-instance` is played).
    pub fn set_instance_port(&mut self, id: &str, port: u16) {
        self.ports.instances.insert(id.to_owned(), port);
    }

    /// Upstreams currently in the sidecar registration.
    pub fn registered_upstreams(&self) -> &[String] {
        &self.upstreams
    }

    /// Transparent mode's implicit upstreams (`implicit = true`), in setup order: not in the
    /// registration, reached through the intention `db -> <name>` the setup writes.
    pub fn implicit_upstreams(&self) -> Vec<String> {
        self.setup
            .upstreams
            .iter()
            .filter(|u| u.implicit)
            .map(|u| u.name.clone())
            .collect()
    }

    /// Writes the whole setup: `service-defaults` for the protocol, config entries, intentions,
    /// the `db` registration with its sidecar, and every instance's catalog registration.
    pub fn apply_setup(&mut self, control: &Control) -> Result<(), PlayError> {
        if let Some(protocol) = &self.setup.protocol {
            let entry = json!({"Kind": "service-defaults", "Name": SERVICE, "Protocol": protocol});
            sim(
                "write service-defaults",
                control.upsert_config_entry(&entry),
            )?;
        }
        for entry in &self.setup.config_entries {
            sim("write config entry", control.upsert_config_entry(entry))?;
        }
        for i in &self.setup.intentions {
            put_intention(control, i)?;
        }
        // What makes an upstream implicit in Consul: an intention with db as the source
        // (`IntentionUpstreams`), and no entry in the registration's `Upstreams`.
        for name in self.implicit_upstreams() {
            let allow = scenarios::IntentionSpec {
                source: SERVICE.to_owned(),
                destination: name,
                action: Some(Policy::Allow),
                permissions: None,
            };
            put_intention(control, &allow)?;
        }
        self.register(control)?;
        for spec in self.instances.clone() {
            self.register_instance(control, &spec)?;
        }
        for q in &self.setup.prepared_queries {
            sim("create prepared query", control.create_prepared_query(q))?;
        }
        Ok(())
    }

    /// Plays one agent-side step and returns a short label for the timeline; `None` for steps
    /// the harness plays itself (`open`, `issue`, `mark`, `idle`, `expect`).
    pub async fn apply_step(
        &mut self,
        control: &Control,
        step: &Step,
    ) -> Result<Option<String>, PlayError> {
        let label = match step {
            Step::Intention(i) => {
                put_intention(control, i)?;
                format!("intention {} → {}: {}", i.source, i.destination, action(i))
            }
            Step::DeleteIntention {
                source,
                destination,
            } => {
                let r = control.delete_intention(source, destination);
                sim("delete intention", r)?;
                format!("delete intention {source} → {destination}")
            }
            Step::ConfigEntry { entry } => {
                sim("write config entry", control.upsert_config_entry(entry))?;
                format!(
                    "config entry {} {}",
                    text(entry, "Kind"),
                    text(entry, "Name")
                )
            }
            Step::RotateCa {
                cross_sign,
                key_type,
                key_bits,
            } => {
                let kind = match (key_type.as_deref(), key_bits) {
                    (None, None) => None,
                    (t, b) => Some(
                        key_kind(t, *b)
                            .ok_or_else(|| PlayError::UnsupportedKey(format!("{t:?}/{b:?}")))?,
                    ),
                };
                let result = match kind {
                    Some(kind) => control.rotate_ca_to(kind, *cross_sign),
                    None => control.rotate_ca(*cross_sign),
                };
                sim("rotate CA", result)?;
                let how = if *cross_sign {
                    "cross-signed"
                } else {
                    "no cross-sign"
                };
                match kind {
                    Some(kind) => format!("rotate CA to {kind} ({how})"),
                    None => format!("rotate CA ({how})"),
                }
            }
            Step::AgentServerCert { ca } => {
                let tls = control.agent_tls().ok_or(PlayError::NoAgentTls)?;
                let (which, label) = match ca {
                    scenarios::AgentCertCa::Agent => (ServerCert::Agent, "the agent CA's"),
                    scenarios::AgentCertCa::Untrusted => {
                        (ServerCert::Untrusted, "an untrusted CA's")
                    }
                };
                tls.present(which);
                format!("agent presents {label} server certificate")
            }
            Step::RotateIntermediate => {
                sim("rotate intermediate", control.rotate_intermediate())?;
                "rotate intermediate".to_owned()
            }
            Step::Fault { fault, for_ } => {
                let f = to_fault(fault);
                match for_ {
                    Some(d) => {
                        let d = self.duration(d)?;
                        control.inject_for(f, d);
                        format!("fault {} for {d:?}", fault_name(fault))
                    }
                    None => {
                        self.faults.push(control.inject(f));
                        format!("fault {}", fault_name(fault))
                    }
                }
            }
            Step::ClearFaults => {
                self.faults.clear();
                control.clear_faults();
                "clear faults".to_owned()
            }
            Step::IndexReset => {
                control.reset_indexes();
                "index reset".to_owned()
            }
            Step::RestartAgent {
                down_for,
                default_intention_policy,
            } => {
                let d = match down_for {
                    Some(d) => self.duration(d)?,
                    None => Duration::from_millis(500),
                };
                match default_intention_policy {
                    None => {
                        control.restart(d).await;
                        format!("agent restarted (down {d:?})")
                    }
                    Some(p) => {
                        let policy = match p {
                            Policy::Allow => crate::state::config::IntentionDefault::Allow,
                            Policy::Deny => crate::state::config::IntentionDefault::Deny,
                        };
                        control.restart_with(d, Some(policy)).await;
                        format!(
                            "agent restarted (down {d:?}) with default_intention_policy {policy:?}"
                        )
                    }
                }
            }
            Step::SetHealth { instance, status } => {
                if !self.instances.iter().any(|i| &i.id == instance) {
                    return Err(PlayError::UnknownInstance(instance.clone()));
                }
                let update = CheckUpdate {
                    node: Some(node_name(instance)),
                    check_id: check_id(instance),
                    status: status.clone(),
                    output: None,
                };
                sim("set health", control.set_check(update))?;
                format!("{instance} {status}")
            }
            Step::AddInstance(spec) => {
                self.register_instance(control, spec)?;
                self.instances.push(spec.clone());
                format!("instance {} of {} registered", spec.id, spec.service)
            }
            Step::AddUpstream { name } => {
                if !self.setup.upstreams.iter().any(|u| &u.name == name) {
                    return Err(PlayError::UnknownUpstream(name.clone()));
                }
                if !self.upstreams.contains(name) {
                    self.upstreams.push(name.clone());
                }
                self.register(control)?;
                format!("sidecar re-registered with upstream {name}")
            }
            Step::Issue { .. }
            | Step::Instance { .. }
            | Step::App { .. }
            | Step::OpenUpstream { .. }
            | Step::Open { .. }
            | Step::Mark { .. }
            | Step::JwtRotate { .. }
            | Step::Idle { .. }
            | Step::Expect(_) => return Ok(None),
        };
        Ok(Some(label))
    }

    fn duration(&self, text: &str) -> Result<Duration, PlayError> {
        self.timeouts
            .get(text)
            .or_else(|| {
                crate::go::duration::GoDuration::parse(text)
                    .ok()
                    .map(|d| d.to_std())
            })
            .ok_or_else(|| PlayError::BadDuration(text.to_owned()))
    }
}

mod error;
mod names;
mod registration;
mod translate;

pub use self::error::PlayError;
pub use self::names::{
    PROXY_TOKEN_RULES, RootsView, check_id, instance_registration, node_name, roots,
};
pub use self::translate::key_kind;

#[cfg(test)]
mod tests;
