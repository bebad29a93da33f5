//! One scenario's world, nothing shared with other scenarios: a fresh agent-sim on
//! `127.0.0.1:0` with ACLs on, a token for the proxy, ports (and unix sockets) for the
//! proxy's listeners, the harness-run app and upstream instances, the setup played through
//! `agent_sim::play`, and the proxy's command line and environment. In transparent mode the
//! world lives in the pod namespace (see `netns`): instances and an outside server on the node
//! side, the proxy as its own UID, and the redirect step's command line. For a proxy
//! configured over xDS the sim also serves gRPC and the world holds its bootstrap (`xds`).

mod apps;
mod exclusions;
mod instances;
mod jwt;
mod ports;
mod transparent;
mod xds;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_sim::acl::DefaultPolicy;
use agent_sim::config::IntentionDefault;
use agent_sim::duration::GoDuration;
use agent_sim::play::{self, Play, Ports};
use agent_sim::{AgentSim, Control, Listening};
use scenarios::{InstanceSpec, Policy, Scenario, Step, Timeouts, TokenDelivery};

#[cfg(test)]
pub(crate) use self::apps::start as start_app;
pub(crate) use self::apps::{App, AppBind, AppKind};
pub(crate) use self::exclusions::Excluded;
pub(crate) use self::instances::{Instances, REQUEST_HEADER, SERVED_BY};
pub(crate) use self::transparent::Pod;
pub(crate) use self::xds::XdsWorld;
use crate::error::Error;
use crate::manifest::Manifest;
use crate::netns::Node;
use crate::plan::Tamper;
use crate::proxy::{ListenAddr, ProxyCommand};
use crate::template;

/// Environment variables removed from the proxy's inherited environment, so the user's own
/// Consul settings cannot leak into a run.
const SCRUBBED_ENV: [&str; 14] = [
    "CONSUL_HTTP_TOKEN",
    "CONSUL_HTTP_TOKEN_FILE",
    "CONSUL_HTTP_SSL",
    "CONSUL_HTTP_SSL_VERIFY",
    "CONSUL_HTTP_AUTH",
    "CONSUL_CACERT",
    "CONSUL_CAPATH",
    "CONSUL_CLIENT_CERT",
    "CONSUL_CLIENT_KEY",
    "CONSUL_TLS_SERVER_NAME",
    "CONSUL_GRPC_ADDR",
    "CONSUL_GRPC_CACERT",
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
    /// Transparent mode: the pod's outside, the proxy's UID, the outbound port.
    pub(crate) pod: Option<Pod>,
    /// An xDS proxy's gRPC address, bootstrap and admin address.
    pub(crate) xds: Option<XdsWorld>,
    /// The scenario's seed (what `spread` checks derive their header values from).
    pub(crate) seed: u64,
    /// The JWT issuers of `setup.jwt_providers` (keys, JWKS servers).
    pub(crate) jwt: jwt::JwtIssuers,
    /// The app, the instances and the public listener are on `::1` (`setup.ipv6`).
    ipv6: bool,
    token_file: PathBuf,
    /// The agent's TLS as the proxy is handed it (`CONSUL_CACERT` and friends), when it serves
    /// HTTPS.
    agent_tls: Option<Vec<(String, String)>>,
    dir: tempfile::TempDir,
}

impl World {
    /// Starts the sim, the app and the instances, picks ports and plays the setup.
    pub(crate) async fn build(
        scenario: &Scenario,
        manifest: &Manifest,
        timeouts: &Timeouts,
        seed: u64,
        node: Option<Node>,
    ) -> Result<Self, Error> {
        let setup = &scenario.setup;
        // An `app` step that blackholes the app needs a backlog it can fill.
        let blackholed = scenario
            .steps
            .iter()
            .any(|s| matches!(s, Step::App { answer } if answer.blackhole));
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
        if let Some(ca) = &setup.ca {
            let kind = play::key_kind(ca.key_type.as_deref(), ca.key_bits).ok_or_else(|| {
                Error::Step(format!(
                    "setup.ca: unsupported key {:?}/{:?}",
                    ca.key_type, ca.key_bits
                ))
            })?;
            builder = builder
                .ca_key_kind(kind)
                .ca_intermediate(ca.intermediate)
                .ca_spiffe_san(!ca.without_spiffe_san);
        }
        if let Some(tls) = &setup.agent_tls {
            let name = agent_sim::model::agent_tls::default_server_name(
                &agent_sim::config::SimConfig::default().datacenter,
            );
            builder = builder.agent_tls(tls.verify_incoming, name);
        }
        let jitter = setup.ca_change_jitter.as_deref().unwrap_or("0s");
        builder = builder.ca_change_jitter(go_duration("setup.ca_change_jitter", jitter)?);
        if manifest.is_xds() {
            builder = builder
                .grpc_bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
                .xds_tls_mode(manifest.xds.tls_mode);
        }
        let sim = builder.start().await?;
        let control = sim.control().clone();

        let token = control
            .create_token(
                setup
                    .token_rules
                    .as_deref()
                    .unwrap_or(play::PROXY_TOKEN_RULES),
                "proxy under test",
            )?
            .secret_id;
        let dir = tempfile::Builder::new()
            .prefix("conformance-")
            .tempdir()
            .map_err(|e| Error::io("create a temporary directory", e))?;
        let token_file = dir.path().join("token");
        std::fs::write(&token_file, format!("{token}\n"))
            .map_err(|e| Error::io("write the token file", e))?;
        let agent_tls = control
            .agent_tls()
            .map(|t| agent_tls_files(t.material(), dir.path()))
            .transpose()?;
        let xds = if manifest.is_xds() {
            Some(xds::prepare(
                &manifest.xds,
                sim.grpc_addr(),
                &token,
                dir.path(),
                control.agent_tls().map(|t| t.material().ca_pem.as_str()),
            )?)
        } else {
            None
        };

        let kind = match setup.protocol.as_deref() {
            Some("http" | "http2" | "grpc") => AppKind::Http,
            _ => AppKind::Echo,
        };
        let bind = if setup.app_socket {
            AppBind::Unix(dir.path().join("app.sock"))
        } else if node.is_some() {
            AppBind::AnyAddress
        } else if setup.ipv6 {
            AppBind::LoopbackV6
        } else if blackholed {
            AppBind::LoopbackSmallBacklog
        } else {
            AppBind::Loopback
        };
        let app = apps::start(kind, bind.clone()).await?;
        let mut instances = Instances::default();
        let mut ports = Ports {
            app: app.addr.port(),
            inbound: ports::free_port()?,
            ..Ports::default()
        };
        if let AppBind::Unix(path) = &bind {
            ports.app_socket = Some(path.display().to_string());
        }
        // An implicit upstream has no local listener (Consul renders it as a filter chain of
        // the outbound listener only).
        for u in setup.upstreams.iter().filter(|u| !u.implicit) {
            ports.upstreams.insert(u.name.clone(), ports::free_port()?);
            if u.socket {
                let path = dir.path().join(format!("{}.sock", u.name));
                ports
                    .upstream_sockets
                    .insert(u.name.clone(), path.display().to_string());
            }
        }
        if setup.ipv6 {
            ports.service_address = Some("::1".to_owned());
            ports.instance_address = Some("::1".to_owned());
        }
        let pod = match (node, &setup.transparent) {
            (Some(node), Some(spec)) => {
                ports.service_address = Some(crate::netns::POD_IP.to_string());
                ports.instance_address = Some(crate::netns::NODE_IP.to_string());
                Some(
                    Pod::new(
                        node,
                        spec,
                        manifest.transparent.uid,
                        dir.path(),
                        &token_file,
                    )
                    .await?,
                )
            }
            _ => None,
        };
        for spec in &setup.instances {
            let node = pod.as_ref().map(Pod::node);
            let i = instances::start(spec, &control, node, setup.ipv6, instances.log()).await?;
            ports.instances.insert(spec.id.clone(), i.addr.port());
            instances.insert(i);
        }
        let mut play = Play::new(
            setup,
            ports,
            manifest.proxy_config.clone(),
            timeouts.clone(),
        );
        // Providers first: an intention naming a missing one fails the proxy's xDS build.
        let jwt = jwt::JwtIssuers::start(&setup.jwt_providers).await?;
        for entry in jwt.entries() {
            control.upsert_config_entry(&entry)?;
        }
        play.apply_setup(&control)?;
        Ok(Self {
            sim,
            play,
            token,
            delivery: setup.token,
            app,
            instances,
            pod,
            xds,
            seed,
            jwt,
            ipv6: setup.ipv6,
            token_file,
            agent_tls,
            dir,
        })
    }

    /// The scenario's directory (token file, bootstrap, unix sockets): a proxy container
    /// mounts it at the same path.
    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The sim's control handle.
    pub(crate) fn control(&self) -> &Control {
        self.sim.control()
    }

    /// The proxy's inbound (public) listener (on the pod's address in transparent mode).
    pub(crate) fn inbound_addr(&self) -> SocketAddr {
        let ip: std::net::IpAddr = match self.pod {
            Some(_) => crate::netns::POD_IP.into(),
            None if self.ipv6 => std::net::Ipv6Addr::LOCALHOST.into(),
            None => Ipv4Addr::LOCALHOST.into(),
        };
        SocketAddr::from((ip, self.play.ports().inbound))
    }

    /// The application's own port as seen from outside the pod (transparent mode).
    pub(crate) fn app_port_addr(&self) -> SocketAddr {
        SocketAddr::from((crate::netns::POD_IP, self.app.addr.port()))
    }

    /// The local listener of an upstream: its unix socket, or its loopback port.
    pub(crate) fn upstream_addr(&self, name: &str) -> Option<ListenAddr> {
        let ports = self.play.ports();
        if let Some(path) = ports.upstream_sockets.get(name) {
            return Some(ListenAddr::Unix(PathBuf::from(path)));
        }
        let port = ports.upstreams.get(name)?;
        Some(ListenAddr::Tcp(SocketAddr::from((
            Ipv4Addr::LOCALHOST,
            *port,
        ))))
    }

    /// What must accept connections before the proxy counts as ready: the inbound listener,
    /// every upstream in the registration, and the transparent outbound listener.
    pub(crate) fn ready_addrs(&self) -> Vec<ListenAddr> {
        let mut addrs = vec![ListenAddr::Tcp(self.inbound_addr())];
        addrs.extend(
            self.play
                .registered_upstreams()
                .iter()
                .filter_map(|u| self.upstream_addr(u)),
        );
        if let Some(pod) = &self.pod {
            addrs.push(ListenAddr::Tcp(pod.outbound_listener()));
        }
        addrs
    }

    /// The placeholders every command template of this world may use (the xDS ones only for
    /// an xDS proxy).
    fn vars(&self, exe: &Path) -> template::Vars {
        let mut vars: template::Vars = [
            ("proxy_id", play::PROXY_ID.to_owned()),
            ("service", play::SERVICE.to_owned()),
            ("agent_addr", self.sim.http_addr()),
            ("token", self.token.clone()),
            ("token_file", self.token_file.display().to_string()),
            ("exe", exe.display().to_string()),
        ]
        .into_iter()
        .collect();
        if let Some(x) = &self.xds {
            vars.insert("grpc_addr", x.grpc_addr.to_string());
            vars.insert("bootstrap", x.bootstrap.display().to_string());
            vars.insert("admin_port", x.admin.port().to_string());
        }
        vars
    }

    /// The proxy's command line and environment for this world.
    pub(crate) fn proxy_command(
        &self,
        manifest: &Manifest,
        exe: &Path,
    ) -> Result<ProxyCommand, Error> {
        let vars = self.vars(&self.runnable_exe(exe)?);
        let mut argv = template::render(&manifest.command, &vars)?;
        manifest.resolve_program(&mut argv);
        let mut env = self.agent_env();
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
            uid: self.pod.as_ref().map(Pod::uid),
        })
    }

    /// How a proxy finds the agent: `CONSUL_HTTP_ADDR` (`https://` when the agent serves TLS,
    /// then with `CONSUL_CACERT`, `CONSUL_CLIENT_CERT`, `CONSUL_CLIENT_KEY`,
    /// `CONSUL_TLS_SERVER_NAME`; and for an xDS proxy `CONSUL_GRPC_ADDR` and `CONSUL_GRPC_CACERT`,
    /// as `consul connect envoy` reads them).
    fn agent_env(&self) -> Vec<(String, String)> {
        let Some(tls) = &self.agent_tls else {
            return vec![("CONSUL_HTTP_ADDR".to_owned(), self.sim.http_addr())];
        };
        let mut env = vec![(
            "CONSUL_HTTP_ADDR".to_owned(),
            format!("https://{}", self.sim.http_addr()),
        )];
        env.extend(tls.iter().cloned());
        if let Some(x) = &self.xds {
            env.push((
                "CONSUL_GRPC_ADDR".to_owned(),
                format!("https://{}", x.grpc_addr),
            ));
            if let Some((_, ca)) = tls.iter().find(|(k, _)| k == "CONSUL_CACERT") {
                env.push(("CONSUL_GRPC_CACERT".to_owned(), ca.clone()));
            }
        }
        env
    }

    /// `exe` as the proxy can run it (a copy in the scenario directory when its UID cannot reach
    /// the original).
    fn runnable_exe(&self, exe: &Path) -> Result<PathBuf, Error> {
        match &self.pod {
            Some(pod) => pod.runnable_exe(exe, self.dir.path()),
            None => Ok(exe.to_path_buf()),
        }
    }

    /// The redirect step's command line (transparent mode), as `manifest` templates it;
    /// `tamper` misconfigures it on purpose (the self-test's broken environments).
    pub(crate) fn redirect_command(
        &self,
        manifest: &Manifest,
        exe: &Path,
        tamper: Option<Tamper>,
    ) -> Result<Option<ProxyCommand>, Error> {
        let Some(pod) = &self.pod else {
            return Ok(None);
        };
        let uid = match tamper {
            Some(Tamper::RedirectWrongUid) => pod.uid() + 1,
            _ => pod.uid(),
        };
        let mut vars = self.vars(exe);
        vars.insert("proxy_uid", uid.to_string());
        vars.insert("app_port", self.app.addr.port().to_string());
        let mut argv = template::render(&manifest.transparent.redirect_command, &vars)?;
        if tamper != Some(Tamper::RedirectIgnoreExclusions) {
            argv.extend(pod.excluded.flags());
        }
        if tamper == Some(Tamper::RedirectSkipInbound) {
            argv.push("-exclude-inbound-port".into());
            argv.push(self.app.addr.port().to_string());
        }
        Ok(Some(ProxyCommand {
            argv,
            env: {
                let mut env = self.agent_env();
                env.push(("CONSUL_HTTP_TOKEN".to_owned(), self.token.clone()));
                env
            },
            env_remove: SCRUBBED_ENV.iter().map(|s| (*s).to_owned()).collect(),
            uid: None,
        }))
    }

    /// Starts another instance (an `add-instance` step's process) and records its port, so the
    /// step's catalog registration can follow.
    pub(crate) async fn start_instance(&mut self, spec: &InstanceSpec) -> Result<(), Error> {
        let node = self.pod.as_ref().map(Pod::node);
        let i = instances::start(
            spec,
            self.sim.control(),
            node,
            self.ipv6,
            self.instances.log(),
        )
        .await?;
        self.play.set_instance_port(&spec.id, i.addr.port());
        self.instances.insert(i);
        Ok(())
    }
}

/// Writes the agent's CA and the proxy's client certificate into the scenario directory and
/// names them as `CONSUL_CACERT`, `CONSUL_CLIENT_CERT`, `CONSUL_CLIENT_KEY` (with
/// `CONSUL_TLS_SERVER_NAME`).
fn agent_tls_files(
    m: &agent_sim::model::agent_tls::AgentTlsMaterial,
    dir: &Path,
) -> Result<Vec<(String, String)>, Error> {
    let mut env = Vec::new();
    for (var, file, pem) in [
        ("CONSUL_CACERT", "agent-ca.pem", &m.ca_pem),
        ("CONSUL_CLIENT_CERT", "agent-client.pem", &m.client.cert_pem),
        (
            "CONSUL_CLIENT_KEY",
            "agent-client-key.pem",
            &m.client.key_pem,
        ),
    ] {
        let path = dir.join(file);
        std::fs::write(&path, pem)
            .map_err(|e| Error::io(format!("write {}", path.display()), e))?;
        env.push((var.to_owned(), path.display().to_string()));
    }
    env.push(("CONSUL_TLS_SERVER_NAME".to_owned(), m.server_name.clone()));
    Ok(env)
}

fn go_duration(field: &str, text: &str) -> Result<Duration, Error> {
    GoDuration::parse(text)
        .map(GoDuration::to_std)
        .map_err(|e| Error::Step(format!("{field}: {e}")))
}
