//! Plays the agent side of a scenario (`scenarios` model) on a simulated agent: the setup
//! (service-defaults, config entries, intentions, the `db` registration with its sidecar, the
//! upstream instances' catalog registrations) and the agent-side steps of the timeline
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

use scenarios::{FaultSpec, InstanceSpec, IntentionSpec, Policy, Setup, Step, Timeouts};
use serde_json::{Map, Value, json};

use crate::state::control::Control;
use crate::state::error::SimError;
use crate::state::faults::{Fault, FaultGuard};
use crate::state::store::CheckUpdate;

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

/// Why playing a setup or step failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlayError {
    /// The simulator rejected a state change.
    #[error("{what}: {source}")]
    Sim {
        /// What was being done.
        what: String,
        /// The simulator's error.
        #[source]
        source: SimError,
    },
    /// A step names an instance that was never set up.
    #[error("unknown instance {0:?}")]
    UnknownInstance(String),
    /// An upstream or instance has no port in [`Ports`].
    #[error("no port was picked for {0}")]
    NoPort(String),
    /// `add-upstream` names an upstream that is not in the setup.
    #[error("upstream {0:?} is not in the setup")]
    UnknownUpstream(String),
    /// A duration is neither a named timeout nor a Go duration.
    #[error("invalid duration {0:?}")]
    BadDuration(String),
    /// `key_type`/`key_bits` name a key kind the CA does not run.
    #[error("unsupported CA key {0}: ec 256/384 or rsa 2048/4096")]
    UnsupportedKey(String),
}

impl PlayError {
    /// A stable machine name for reports.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Sim { .. } => "agent_control_failed",
            Self::UnknownInstance(_) => "unknown_instance",
            Self::NoPort(_) => "no_port",
            Self::UnknownUpstream(_) => "unknown_upstream",
            Self::BadDuration(_) => "bad_duration",
            Self::UnsupportedKey(_) => "unsupported_ca_key",
        }
    }
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
                .filter(|u| u.initial)
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
        self.register(control)?;
        for spec in self.instances.clone() {
            self.register_instance(control, &spec)?;
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
            | Step::Open { .. }
            | Step::Mark { .. }
            | Step::Idle { .. }
            | Step::Expect(_) => return Ok(None),
        };
        Ok(Some(label))
    }

    /// The `db` registration (as `PUT /v1/agent/service/register` takes it) with its sidecar:
    /// transparent mode, unix sockets and addresses as the setup and [`Ports`] say.
    pub fn registration(&self) -> Result<Value, PlayError> {
        let mut config: Map<String, Value> = self.knobs.clone().into_iter().collect();
        config.extend(self.setup.proxy_config.clone());
        let mut upstreams = Vec::new();
        for name in &self.upstreams {
            upstreams.push(self.upstream_entry(name)?);
        }
        let mut proxy = json!({"Config": config, "Upstreams": upstreams});
        if let Some(t) = &self.setup.transparent {
            proxy["Mode"] = json!("transparent");
            proxy["TransparentProxy"] = json!({
                "OutboundListenerPort": t.outbound_port.unwrap_or(DEFAULT_OUTBOUND_PORT),
                "DialedDirectly": t.dialed_directly,
            });
        }
        let address = self.ports.service_address.as_deref().unwrap_or(LOOPBACK);
        let mut sidecar = json!({"Port": self.ports.inbound, "Proxy": proxy});
        if self.ports.service_address.is_some() {
            sidecar["Address"] = json!(address);
        }
        let mut reg = json!({"ID": SERVICE, "Name": SERVICE, "Address": address});
        match (self.setup.app_socket, &self.ports.app_socket) {
            (true, Some(path)) => reg["SocketPath"] = json!(path),
            (true, None) => return Err(PlayError::NoPort("the app's unix socket".into())),
            (false, _) => reg["Port"] = json!(self.ports.app),
        }
        reg["Connect"] = json!({"SidecarService": sidecar});
        Ok(reg)
    }

    /// One `Upstreams[]` entry: a loopback port, or a unix socket.
    fn upstream_entry(&self, name: &str) -> Result<Value, PlayError> {
        let spec = self.setup.upstreams.iter().find(|u| u.name == name);
        if let Some(spec) = spec.filter(|s| s.socket) {
            let path =
                self.ports.upstream_sockets.get(name).ok_or_else(|| {
                    PlayError::NoPort(format!("the unix socket of upstream {name}"))
                })?;
            let mut entry = json!({"DestinationName": name, "LocalBindSocketPath": path});
            if let Some(mode) = &spec.socket_mode {
                entry["LocalBindSocketMode"] = json!(mode);
            }
            return Ok(entry);
        }
        let port = self
            .ports
            .upstreams
            .get(name)
            .ok_or_else(|| PlayError::NoPort(format!("upstream {name}")))?;
        Ok(json!({
            "DestinationName": name,
            "LocalBindAddress": LOOPBACK,
            "LocalBindPort": port,
        }))
    }

    fn register(&self, control: &Control) -> Result<(), PlayError> {
        sim("register db", control.register(&self.registration()?))
    }

    fn register_instance(&self, control: &Control, spec: &InstanceSpec) -> Result<(), PlayError> {
        let port = self
            .ports
            .instances
            .get(&spec.id)
            .ok_or_else(|| PlayError::NoPort(format!("instance {}", spec.id)))?;
        let address = self.ports.instance_address.as_deref().unwrap_or(LOOPBACK);
        let body = instance_registration(spec, address, *port);
        sim(
            &format!("register instance {}", spec.id),
            control.catalog_register(&body),
        )
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

fn put_intention(control: &Control, i: &IntentionSpec) -> Result<(), PlayError> {
    let mut body = Map::new();
    if let Some(a) = i.action {
        body.insert("Action".into(), json!(policy(a)));
    }
    if let Some(p) = &i.permissions {
        body.insert("Permissions".into(), Value::Array(p.clone()));
    }
    let r = control.put_intention(&i.source, &i.destination, &Value::Object(body));
    sim(&format!("intention {} → {}", i.source, i.destination), r)
}

fn action(i: &IntentionSpec) -> &'static str {
    match (i.action, &i.permissions) {
        (Some(a), _) => policy(a),
        (None, Some(_)) => "L7 permissions",
        (None, None) => "no action",
    }
}

fn policy(p: Policy) -> &'static str {
    match p {
        Policy::Allow => "allow",
        Policy::Deny => "deny",
    }
}

fn to_fault(f: &FaultSpec) -> Fault {
    match f {
        FaultSpec::AgentDown => Fault::AgentDown,
        FaultSpec::AgentHung => Fault::AgentHung,
        FaultSpec::ServersUnreachable => Fault::ServersUnreachable,
        FaultSpec::Errors => Fault::Errors {
            status: 500,
            body: "agent-sim: injected error".into(),
            path_prefix: None,
        },
    }
}

fn fault_name(f: &FaultSpec) -> &'static str {
    match f {
        FaultSpec::AgentDown => "agent-down",
        FaultSpec::AgentHung => "agent-hung",
        FaultSpec::ServersUnreachable => "servers-unreachable",
        FaultSpec::Errors => "errors",
    }
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or("?")
}

/// The CA key kind for a scenario's `key_type`/`key_bits` (type default `ec`; bits default 256
/// for `ec`, 2048 for `rsa`).
pub fn key_kind(
    key_type: Option<&str>,
    key_bits: Option<u32>,
) -> Option<crate::model::ca::KeyKind> {
    let key_type = key_type.unwrap_or("ec");
    let bits = key_bits.unwrap_or(if key_type == "rsa" { 2048 } else { 256 });
    crate::model::ca::KeyKind::from_config(key_type, i64::from(bits))
}

fn sim<T>(what: &str, r: Result<T, SimError>) -> Result<T, PlayError> {
    r.map_err(|source| PlayError::Sim {
        what: what.to_owned(),
        source,
    })
}

mod names;

pub use self::names::{
    PROXY_TOKEN_RULES, RootsView, check_id, instance_registration, node_name, roots,
};

#[cfg(test)]
mod tests;
