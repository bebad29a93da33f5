//! One scenario's world, nothing shared with other scenarios: a fresh agent-sim on
//! `127.0.0.1:0` with ACLs on, a token for the proxy, ports for the proxy's listeners, the
//! harness-run app and upstream instances, the setup played through `agent_sim::play`, and
//! the proxy's command line and environment.

mod apps;
mod instances;
mod ports;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_sim::acl::DefaultPolicy;
use agent_sim::config::IntentionDefault;
use agent_sim::duration::GoDuration;
use agent_sim::play::{self, Play, Ports};
use agent_sim::{AgentSim, Control, Listening};
use scenarios::{InstanceSpec, Policy, Setup, Timeouts, TokenDelivery};

pub(crate) use self::apps::{App, AppKind};
pub(crate) use self::instances::Instances;
use crate::error::Error;
use crate::manifest::Manifest;
use crate::proxy::ProxyCommand;
use crate::template;

/// Environment variables removed from the proxy's inherited environment, so the user's own
/// Consul settings cannot leak into a run.
const SCRUBBED_ENV: [&str; 9] = [
    "CONSUL_HTTP_TOKEN",
    "CONSUL_HTTP_TOKEN_FILE",
    "CONSUL_HTTP_SSL",
    "CONSUL_HTTP_AUTH",
    "CONSUL_CACERT",
    "CONSUL_CLIENT_CERT",
    "CONSUL_CLIENT_KEY",
    "CONNECT_PROXY_ID",
    "CONNECT_SIDECAR_FOR",
];

/// A scenario's world.
#[derive(Debug)]
pub(crate) struct World {
    pub(crate) sim: Listening,
    pub(crate) play: Play,
    pub(crate) token: String,
    pub(crate) delivery: TokenDelivery,
    pub(crate) app: App,
    pub(crate) instances: Instances,
    token_file: PathBuf,
    _dir: tempfile::TempDir,
}

impl World {
    /// Starts the sim, the app and the instances, picks ports and plays the setup.
    pub(crate) async fn build(
        setup: &Setup,
        manifest: &Manifest,
        timeouts: &Timeouts,
        seed: u64,
    ) -> Result<Self, Error> {
        let mgmt = format!("conformance-management-{seed:016x}");
        let policy = match setup.acl_default_policy.unwrap_or(Policy::Deny) {
            Policy::Allow => DefaultPolicy::Allow,
            Policy::Deny => DefaultPolicy::Deny,
        };
        let mut builder = AgentSim::builder().acls(mgmt, policy).seed(seed);
        if let Some(p) = setup.default_intention_policy {
            builder = builder.default_intention_policy(match p {
                Policy::Allow => IntentionDefault::Allow,
                Policy::Deny => IntentionDefault::Deny,
            });
        }
        if let Some(ttl) = &setup.leaf_ttl {
            builder = builder.leaf_ttl(go_duration("setup.leaf_ttl", ttl)?);
        }
        let jitter = setup.ca_change_jitter.as_deref().unwrap_or("0s");
        builder = builder.ca_change_jitter(go_duration("setup.ca_change_jitter", jitter)?);
        let sim = builder.start().await?;
        let control = sim.control().clone();

        let token = control
            .create_token(play::PROXY_TOKEN_RULES, "proxy under test")?
            .secret_id;
        let dir = tempfile::Builder::new()
            .prefix("conformance-")
            .tempdir()
            .map_err(|e| Error::io("create a temporary directory", e))?;
        let token_file = dir.path().join("token");
        std::fs::write(&token_file, format!("{token}\n"))
            .map_err(|e| Error::io("write the token file", e))?;

        let kind = match setup.protocol.as_deref() {
            Some("http" | "http2" | "grpc") => AppKind::Http,
            _ => AppKind::Echo,
        };
        let app = apps::start(kind).await?;
        let mut instances = Instances::default();
        let mut ports = Ports {
            app: app.addr.port(),
            inbound: ports::free_port()?,
            ..Ports::default()
        };
        for u in &setup.upstreams {
            ports.upstreams.insert(u.name.clone(), ports::free_port()?);
        }
        for spec in &setup.instances {
            let i = instances::start(spec, &control).await?;
            ports.instances.insert(spec.id.clone(), i.addr.port());
            instances.insert(i);
        }
        let mut play = Play::new(
            setup,
            ports,
            manifest.proxy_config.clone(),
            timeouts.clone(),
        );
        play.apply_setup(&control)?;
        Ok(Self {
            sim,
            play,
            token,
            delivery: setup.token,
            app,
            instances,
            token_file,
            _dir: dir,
        })
    }

    /// The sim's control handle.
    pub(crate) fn control(&self) -> &Control {
        self.sim.control()
    }

    /// The proxy's inbound (public) listener.
    pub(crate) fn inbound_addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.play.ports().inbound))
    }

    /// The local listener of an upstream.
    pub(crate) fn upstream_addr(&self, name: &str) -> Option<SocketAddr> {
        let port = self.play.ports().upstreams.get(name)?;
        Some(SocketAddr::from(([127, 0, 0, 1], *port)))
    }

    /// What must accept connections before the proxy counts as ready: the inbound listener and
    /// every upstream in the registration.
    pub(crate) fn ready_addrs(&self) -> Vec<SocketAddr> {
        let mut addrs = vec![self.inbound_addr()];
        addrs.extend(
            self.play
                .registered_upstreams()
                .iter()
                .filter_map(|u| self.upstream_addr(u)),
        );
        addrs
    }

    /// The proxy's command line and environment for this world.
    pub(crate) fn proxy_command(
        &self,
        manifest: &Manifest,
        exe: &Path,
    ) -> Result<ProxyCommand, Error> {
        let vars: template::Vars = [
            ("proxy_id", play::PROXY_ID.to_owned()),
            ("service", play::SERVICE.to_owned()),
            ("agent_addr", self.sim.http_addr()),
            ("token", self.token.clone()),
            ("token_file", self.token_file.display().to_string()),
            ("exe", exe.display().to_string()),
        ]
        .into_iter()
        .collect();
        let mut argv = template::render(&manifest.command, &vars)?;
        let mut env = vec![("CONSUL_HTTP_ADDR".to_owned(), self.sim.http_addr())];
        match (self.delivery, &manifest.token_file_args) {
            (TokenDelivery::Env, _) => {
                env.push(("CONSUL_HTTP_TOKEN".to_owned(), self.token.clone()));
            }
            (TokenDelivery::File, Some(args)) => {
                // Rendered behind a dummy program name so an empty list is allowed.
                let extra = template::render(&format!("x {args}"), &vars)?;
                argv.extend(extra.into_iter().skip(1));
            }
            (TokenDelivery::File, None) => {
                let file = self.token_file.display().to_string();
                env.push(("CONSUL_HTTP_TOKEN_FILE".to_owned(), file));
            }
        }
        Ok(ProxyCommand {
            argv,
            env,
            env_remove: SCRUBBED_ENV.iter().map(|s| (*s).to_owned()).collect(),
        })
    }

    /// Starts another instance (an `add-instance` step's process) and records its port, so the
    /// step's catalog registration can follow.
    pub(crate) async fn start_instance(&mut self, spec: &InstanceSpec) -> Result<(), Error> {
        let i = instances::start(spec, self.sim.control()).await?;
        self.play.set_instance_port(&spec.id, i.addr.port());
        self.instances.insert(i);
        Ok(())
    }
}

fn go_duration(field: &str, text: &str) -> Result<Duration, Error> {
    GoDuration::parse(text)
        .map(GoDuration::to_std)
        .map_err(|e| Error::Step(format!("{field}: {e}")))
}
