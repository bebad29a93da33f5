//! `agent-sim --scenario NAME`: plays the agent side of a catalogue scenario for a proxy started
//! by hand, printing each step and what a correct proxy should do at that point.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::net::TcpListener;
use std::time::Duration;

use agent_sim::Control;
use agent_sim::acl::{AclConfig, DefaultPolicy};
use agent_sim::config::{IntentionDefault, SimConfig};
use agent_sim::play::{PROXY_ID, PROXY_TOKEN_RULES, Play, Ports};
use anyhow::{Context, anyhow};
use scenarios::{
    Check, Identity, InboundVia, Outcome, OutsideTarget, Policy, Scenario, Step, Timeouts,
    UpstreamVia,
};

/// Finds a catalogue scenario (expanding generated ones with `seed`).
pub(crate) fn find(name: &str, seed: u64) -> anyhow::Result<Scenario> {
    let s = scenarios::catalogue()
        .into_iter()
        .find(|s| s.id == name)
        .ok_or_else(|| {
            anyhow!("unknown scenario {name:?}; `agent-sim --list-scenarios` lists them")
        })?;
    if !s.setup.jwt_providers.is_empty() {
        anyhow::bail!(
            "scenario {} needs JWT issuers (its `setup.jwt_providers`: keys, JWKS servers and the \
             tokens its checks send), which only the conformance harness runs: play it with \
             `conformance run --scenario {}`",
            s.id,
            s.id
        );
    }
    Ok(if s.generate.is_some() {
        scenarios::expand(&s, seed)
    } else {
        s
    })
}

/// Prints the catalogue (a closed pipe, as in `| head`, just ends the listing).
pub(crate) fn list() {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    for s in scenarios::catalogue() {
        let profile = format!("{:?}", s.profile).to_lowercase();
        if writeln!(out, "{:<32} {profile:<10} {}", s.id, s.description).is_err() {
            return;
        }
    }
}

/// The agent configuration a scenario's setup asks for (ACLs are always on).
pub(crate) fn configure(
    cfg: &mut SimConfig,
    s: &Scenario,
    management_token: &str,
) -> anyhow::Result<()> {
    let setup = &s.setup;
    cfg.acl = AclConfig {
        enabled: true,
        default_policy: match setup.acl_default_policy.unwrap_or(Policy::Deny) {
            Policy::Allow => DefaultPolicy::Allow,
            Policy::Deny => DefaultPolicy::Deny,
        },
        management_token: Some(management_token.to_owned()),
        default_token: None,
    };
    cfg.default_intention_policy = setup.default_intention_policy.map(|p| match p {
        Policy::Allow => IntentionDefault::Allow,
        Policy::Deny => IntentionDefault::Deny,
    });
    let timeouts = Timeouts::default();
    if let Some(ttl) = &setup.leaf_ttl {
        cfg.leaf_ttl = timeouts
            .resolve(ttl)
            .map_err(|e| anyhow!("leaf_ttl {ttl:?}: {e}"))?;
    }
    if let Some(tls) = &setup.agent_tls {
        cfg.agent_tls = Some(agent_sim::state::agent_tls::AgentTlsConfig {
            verify_incoming: tls.verify_incoming,
            server_name: agent_sim::model::agent_tls::default_server_name(&cfg.datacenter),
        });
    }
    if let Some(ca) = &setup.ca {
        cfg.ca_intermediate = ca.intermediate;
        cfg.ca_spiffe_san = !ca.without_spiffe_san;
    }
    cfg.ca_change_jitter = match &setup.ca_change_jitter {
        Some(j) => timeouts
            .resolve(j)
            .map_err(|e| anyhow!("ca_change_jitter {j:?}: {e}"))?,
        None => Duration::ZERO,
    };
    Ok(())
}

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")
        .context("picking a free port")?
        .local_addr()?
        .port())
}

/// The per-process directory for a scenario's unix sockets (created only when a scenario needs
/// it), removed with whatever the proxy left in it when the guard drops (the process ends
/// orderly: timeline done, Ctrl-C, SIGTERM, or an error).
#[derive(Debug)]
pub(crate) struct SocketDir(std::path::PathBuf);

impl SocketDir {
    /// `$TMPDIR/agent-sim-<pid>`.
    pub(crate) fn for_process() -> Self {
        Self(std::env::temp_dir().join(format!("agent-sim-{}", std::process::id())))
    }
}

impl Drop for SocketDir {
    fn drop(&mut self) {
        if self.0.exists()
            && let Err(e) = std::fs::remove_dir_all(&self.0)
        {
            tracing::warn!(dir = %self.0.display(), error = %e, "could not remove the socket directory");
        }
    }
}

/// Sets the scenario up on the running sim and plays its timeline; unix sockets go to
/// `sockets`.
pub(crate) async fn play(
    c: &Control,
    agent_addr: &str,
    grpc_addr: Option<std::net::SocketAddr>,
    s: &Scenario,
    pace: Duration,
    sockets: &SocketDir,
) -> anyhow::Result<()> {
    let mut ports = Ports {
        app: free_port()?,
        inbound: free_port()?,
        ..Ports::default()
    };
    // Unix sockets go to a per-process directory; the proxy started by hand creates the
    // upstream sockets, the user's application the app socket.
    let socket_dir = &sockets.0;
    let socket = |name: &str| socket_dir.join(name).display().to_string();
    if s.setup.app_socket {
        ports.app_socket = Some(socket("app.sock"));
    }
    for u in &s.setup.upstreams {
        ports.upstreams.insert(u.name.clone(), free_port()?);
        if u.socket {
            let path = socket(&format!("{}.sock", u.name));
            ports.upstream_sockets.insert(u.name.clone(), path);
        }
    }
    if ports.app_socket.is_some() || !ports.upstream_sockets.is_empty() {
        std::fs::create_dir_all(socket_dir)
            .with_context(|| format!("creating {}", socket_dir.display()))?;
    }
    let added = s.steps.iter().filter_map(|st| match st {
        Step::AddInstance(spec) => Some(spec.id.clone()),
        _ => None,
    });
    for id in s.setup.instances.iter().map(|i| i.id.clone()).chain(added) {
        ports.instances.insert(id, free_port()?);
    }
    let rules = s.setup.token_rules.as_deref().unwrap_or(PROXY_TOKEN_RULES);
    let token = c.create_token(rules, "proxy under test")?;
    let timeouts = Timeouts::default();
    let mut player = Play::new(&s.setup, ports.clone(), BTreeMap::new(), timeouts.clone());
    player
        .apply_setup(c)
        .context("applying the scenario's setup")?;

    println!("\nscenario {}: {}\n", s.id, s.description);
    println!("start the proxy under test now, for example:");
    println!(
        "  CONSUL_HTTP_ADDR={agent_addr} CONSUL_HTTP_TOKEN={} <your-proxy> -proxy-id {PROXY_ID}",
        token.secret_id
    );
    print_envoy_hint(agent_addr, grpc_addr, &token.secret_id);
    let app = match &ports.app_socket {
        Some(path) => format!("the unix socket {path}"),
        None => format!("127.0.0.1:{}", ports.app),
    };
    println!(
        "its public listener is 127.0.0.1:{}; the application behind it is expected on {app}",
        ports.inbound
    );
    for (name, port) in &ports.upstreams {
        match ports.upstream_sockets.get(name) {
            Some(path) => println!("upstream {name}: local listener on the unix socket {path}"),
            None => println!("upstream {name}: local listener 127.0.0.1:{port}"),
        }
    }
    if s.setup.transparent.is_some() {
        println!(
            "transparent mode: install the redirect rules first (as root, in the proxy's network \
             namespace): conformance redirect-traffic -proxy-id {PROXY_ID} -proxy-uid <the proxy's uid>"
        );
    }
    for (id, port) in &ports.instances {
        println!(
            "instance {id} is registered at 127.0.0.1:{port} (agent-sim does not run it; `conformance run` does)"
        );
    }
    println!(
        "client identities for probes: POST /_sim/identity/<service> or /_sim/forge on this agent \
         (with the management token printed above as X-Consul-Token)\n"
    );
    let public = format!("127.0.0.1:{}", ports.inbound);
    println!(
        "waiting for the proxy on {public} (its public listener): {}",
        if listening(&public).await {
            "listening"
        } else {
            "not listening yet; start it with the command above"
        }
    );
    wait_to_start(pace).await;

    for (i, step) in s.steps.iter().enumerate() {
        let n = i + 1;
        match step {
            Step::Expect(e) => {
                let when = e
                    .within
                    .as_deref()
                    .map_or_else(|| "now".to_owned(), |w| format!("within {w}"));
                println!(
                    "[{n}] a correct proxy now: {} — {} ({when}){}",
                    e.name,
                    describe(&e.check),
                    if listening(&public).await {
                        ""
                    } else {
                        " [the proxy is not listening on its public port]"
                    }
                );
                let wait = e
                    .within
                    .as_deref()
                    .and_then(|w| timeouts.resolve(w).ok())
                    .unwrap_or_default();
                // The check's time budget, scaled down with a short pace.
                tokio::time::sleep(pace.max(wait.min(pace * 10))).await;
            }
            other => match player.apply_step(c, other).await? {
                Some(label) => println!("[{n}] agent: {label}"),
                None => println!("[{n}] harness: {}", harness_step(other)),
            },
        }
        tokio::time::sleep(pace).await;
    }
    println!("\ntimeline done");
    // Grading needs conformance's probes, apps and checks, and agent-sim must not depend on
    // conformance: the grading run is conformance's.
    println!(
        "agent-sim only plays the timeline; to have each check graded (pass/fail per check), \
         let conformance start the proxy and play this scenario:\n  conformance run \
         --proxy-cmd '<your-proxy> -proxy-id {{proxy_id}}' --features {} --scenario {}",
        s.features.join(","),
        s.id
    );
    Ok(())
}

/// Whether something accepts TCP connections on `addr` now.
async fn listening(addr: &str) -> bool {
    let connect = tokio::net::TcpStream::connect(addr.to_owned());
    matches!(
        tokio::time::timeout(Duration::from_millis(300), connect).await,
        Ok(Ok(_))
    )
}

/// The commands that bootstrap and run Envoy against this agent, as `consul connect envoy` does.
fn print_envoy_hint(agent_addr: &str, grpc_addr: Option<std::net::SocketAddr>, token: &str) {
    let Some(grpc) = grpc_addr else {
        println!(
            "or Envoy: serve xDS with --grpc-listen, then `agent-sim connect envoy -bootstrap`"
        );
        return;
    };
    println!(
        "or Envoy, bootstrapped as `consul connect envoy` does:\n  agent-sim connect envoy -bootstrap \
         -proxy-id {PROXY_ID} -http-addr {agent_addr} -grpc-addr {grpc} -token {token} \
         > bootstrap.json \\\n    && envoy -c bootstrap.json --drain-time-s 1"
    );
}

async fn wait_to_start(pace: Duration) {
    if std::io::stdin().is_terminal() {
        println!("press Enter to play the timeline");
        let _ =
            tokio::task::spawn_blocking(|| std::io::stdin().read_line(&mut String::new())).await;
    } else {
        tokio::time::sleep(pace).await;
    }
}

fn who(id: &Identity) -> String {
    match id {
        Identity::Service { service } => format!("a valid leaf for {service}"),
        Identity::Named { name } => format!("the identity issued as {name}"),
        Identity::UntrustedCa { service } => format!("a leaf for {service} from an untrusted CA"),
        Identity::ForeignTrustDomain { service } => {
            format!("a trusted-root leaf for {service} in a foreign trust domain")
        }
        Identity::Expired { service } => format!("an expired leaf for {service}"),
        Identity::NoSpiffe => "a certificate without a SPIFFE URI".into(),
        Identity::AgentId => "a certificate with an agent SPIFFE ID".into(),
        Identity::CommonNameMismatch {
            common_name,
            service,
        } => format!("CN {common_name} but URI SAN {service}"),
        Identity::SelfSigned { service } => format!("a self-signed certificate for {service}"),
        Identity::NoCert => "no client certificate".into(),
    }
}

fn describe(check: &Check) -> String {
    match check {
        Check::Inbound {
            identity,
            outcome,
            via,
        } => {
            let verb = if *outcome == Outcome::Allowed {
                "accepts"
            } else {
                "refuses"
            };
            let target = match via {
                InboundVia::PublicListener => "",
                InboundVia::AppPort => " to the application's port (captured)",
                InboundVia::ExcludedPort => " to the pod's excluded port (not captured)",
            };
            format!(
                "{verb} a new inbound connection{target} presenting {}",
                who(identity)
            )
        }
        Check::UnknownDestination {
            to: OutsideTarget::ExcludedPort | OutsideTarget::ExcludedCidr,
            ..
        } => "leaves a dial the redirect step excludes alone".into(),
        Check::UnknownDestination { outcome, .. } => match outcome {
            Outcome::Allowed => "passes a dial of a non-mesh address through".into(),
            Outcome::Refused => "refuses a dial of an address no service owns".into(),
        },
        Check::NoRedirectLoop => "does not capture its own outbound connections".into(),
        Check::TlsHandshake {
            identity,
            tls_version,
            outcome,
            ..
        } => {
            let verb = if *outcome == Outcome::Allowed {
                "completes"
            } else {
                "refuses"
            };
            let offer = tls_version
                .as_deref()
                .map_or("any TLS version".to_owned(), |v| format!("only TLS {v}"));
            format!(
                "{verb} a TLS handshake offering {offer} presenting {}",
                who(identity)
            )
        }
        Check::Http {
            path,
            status,
            method,
            ..
        } => {
            format!(
                "answers {} {path} with {status}",
                method.as_deref().unwrap_or("GET")
            )
        }
        Check::Grpc {
            path,
            code,
            upstream,
            ..
        } => match upstream {
            Some(u) => format!("carries the app's gRPC {path} through {u} (grpc-status {code})"),
            None => format!("answers gRPC {path} with grpc-status {code}"),
        },
        Check::ConnOpen { conn } => format!("keeps connection {conn} open"),
        Check::ConnClosed { conn } => format!("has closed connection {conn}"),
        Check::ServedLeaf { service, .. } => {
            format!("serves a leaf for {service} chaining to the active root")
        }
        Check::Upstream {
            upstream,
            reach,
            via,
            ..
        } => format!(
            "carries upstream {upstream} traffic{} to one of {}",
            match via {
                UpstreamVia::Listener => "",
                UpstreamVia::VirtualIp => " (dialed at its virtual IP)",
            },
            reach.join(", ")
        ),
        Check::UpstreamRefused { upstream } => {
            format!("sends no upstream {upstream} traffic to any instance")
        }
        Check::ListenerOpen { upstream } => format!("listens for upstream {upstream}"),
        Check::AgentUsage { .. } => {
            "uses blocking queries with its token, without hot polling".into()
        }
        Check::IndexResetHonoured => {
            "resets its blocking index after the index went backwards".into()
        }
        Check::AuthorizeSerial => {
            "sends ClientCertSerial with every authorize call it makes".into()
        }
        Check::ProxyLog { contains } => {
            format!("logs a line containing one of {contains:?}")
        }
        Check::Request(c) => format!(
            "routes {} through upstream {} as the discovery chain says (status {})",
            c.path, c.upstream, c.status
        ),
        Check::Spread(c) => format!(
            "spreads {} requests through upstream {} as the discovery chain says",
            c.requests, c.upstream
        ),
        Check::Burst(c) => format!(
            "enforces the limits of upstream {}: {} of {} concurrent requests answered",
            c.upstream, c.ok, c.requests
        ),
    }
}

fn harness_step(step: &Step) -> String {
    match step {
        Step::Open { conn, identity, .. } => format!(
            "open connection {conn} presenting {} and keep it open",
            who(identity)
        ),
        Step::Issue { name, service } => {
            format!("issue a leaf for {service} now and keep it as {name}")
        }
        Step::Mark { name } => format!("mark {name}"),
        Step::Instance { instance, answer } => format!("instance {instance} answers {answer:?}"),
        Step::App { answer } => format!("the local app answers {answer:?}"),
        Step::OpenUpstream { conn, upstream, .. } => {
            format!("open connection {conn} from the app to upstream {upstream}")
        }
        Step::Idle { duration, reason } => format!("idle {duration}: {reason}"),
        _ => "(nothing)".into(),
    }
}
