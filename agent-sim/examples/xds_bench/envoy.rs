//! Part 1: a real Envoy 1.40 bootstrapped by `xds::bootstrap::render` against an in-process
//! agent-sim; time from a change (intention, endpoint health among 1,000 and 10,000 instances,
//! CA rotation) to Envoy's ACK of the push it causes.

use std::net::{SocketAddr, TcpListener as StdListener};
use std::path::Path;
use std::time::Duration;

use agent_sim::xds::bootstrap::{BootstrapParams, render};
use agent_sim::xds::types::{CLUSTER, ENDPOINT, LISTENER, SECRET};
use agent_sim::xds::{TlsMode, XdsEvent};
use agent_sim::{AgentSim, CheckUpdate, Control, Listening};
use anyhow::{Context, bail};
use serde_json::json;
use tokio::time::Instant;

use crate::util::{self, Summary, WAIT, summarize};

const PROXY: &str = "web-sidecar-proxy";
/// How long no new push must follow the last ACK of a CA rotation for it to count as the last.
const ROTATION_QUIET: Duration = Duration::from_millis(400);

/// The knobs of part 1.
pub(crate) struct Opts {
    pub(crate) reps: usize,
    pub(crate) small: usize,
    pub(crate) large: usize,
}

/// Results of one TLS mode.
pub(crate) struct ModeResult {
    pub(crate) mode: TlsMode,
    /// (change, change -> ACK, change -> the sim's push).
    pub(crate) rows: Vec<(String, Summary, Summary)>,
    pub(crate) notes: Vec<String>,
}

/// Envoy in its own process group, killed (the whole group) when dropped.
struct EnvoyProc {
    child: tokio::process::Child,
    _dir: tempfile::TempDir,
}

impl Drop for EnvoyProc {
    fn drop(&mut self) {
        if let Some(pid) = self.child.id().and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        // kill_on_drop reaps the child itself.
    }
}

fn free_port() -> anyhow::Result<u16> {
    Ok(StdListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

async fn start_envoy(bin: &Path, grpc: SocketAddr) -> anyhow::Result<EnvoyProc> {
    let params = BootstrapParams {
        proxy_id: PROXY.into(),
        cluster: "web".into(),
        namespace: String::new(),
        partition: String::new(),
        datacenter: "dc1".into(),
        grpc_addr: grpc,
        token: None,
        admin_bind: SocketAddr::from(([127, 0, 0, 1], 0)),
        agent_ca_pem: None,
    };
    let dir = tempfile::tempdir()?;
    let cfg = dir.path().join("bootstrap.json");
    std::fs::write(&cfg, serde_json::to_vec_pretty(&render(&params))?)?;
    let log = std::fs::File::create(dir.path().join("envoy.log"))?;
    let child = tokio::process::Command::new(bin)
        .arg("-c")
        .arg(&cfg)
        .args([
            "--disable-hot-restart",
            "--concurrency",
            "1",
            "--log-level",
            "warn",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot start {}", bin.display()))?;
    Ok(EnvoyProc { child, _dir: dir })
}

/// Registers `db` instances `from..to` (connect sidecars of `db`, one per node, each with a
/// passing service check `db-check-<i>`) through the catalog register path.
fn register_db(c: &Control, from: usize, to: usize) -> anyhow::Result<()> {
    for i in from..to {
        let addr = format!("127.{}.{}.{}", 1 + i / 62_500, (i / 250) % 250, 1 + i % 250);
        c.catalog_register(&json!({
            "Node": format!("db-node-{i}"),
            "Address": addr,
            "Service": {
                "Kind": "connect-proxy",
                "ID": format!("db-sidecar-proxy-{i}"),
                "Service": "db-sidecar-proxy",
                "Address": addr,
                "Port": 21000,
                "Proxy": {"DestinationServiceName": "db", "DestinationServiceID": "db"}
            },
            "Checks": [{
                "CheckID": format!("db-check-{i}"),
                "Name": "db sidecar",
                "Status": "passing",
                "ServiceID": format!("db-sidecar-proxy-{i}")
            }]
        }))
        .with_context(|| format!("register db instance {i}"))?;
    }
    Ok(())
}

fn register_web(c: &Control) -> anyhow::Result<()> {
    c.register(&json!({
        "Name": "web",
        "Address": "127.0.0.1",
        "Port": free_port()?,
        "Connect": {"SidecarService": {
            "Port": free_port()?,
            "Proxy": {
                "Config": {"bind_address": "127.0.0.1"},
                "Upstreams": [{
                    "DestinationName": "db",
                    "LocalBindAddress": "127.0.0.1",
                    "LocalBindPort": free_port()?
                }]
            }
        }}
    }))?;
    Ok(())
}

/// Runs part 1 in one TLS mode.
pub(crate) async fn run(bin: &Path, mode: TlsMode, o: &Opts) -> anyhow::Result<ModeResult> {
    let sim: Listening = AgentSim::builder()
        .grpc_bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .run_checks(false)
        .ca_change_jitter(Duration::ZERO)
        .xds_tls_mode(mode)
        .start()
        .await?;
    let c = sim.control().clone();
    let log = c.xds_log();
    let mut notes = Vec::new();
    register_web(&c)?;
    let t = Instant::now();
    register_db(&c, 0, o.small)?;
    notes.push(format!(
        "registering {} db instances (no stream open): {:.0} ms",
        o.small,
        t.elapsed().as_secs_f64() * 1e3
    ));
    let grpc = sim.grpc_addr().context("no gRPC port")?;
    let started = Instant::now();
    let _envoy = start_envoy(bin, grpc).await?;
    let opened = log
        .wait_for(
            WAIT,
            |e| matches!(&e.event, XdsEvent::Opened { node_id, .. } if node_id == PROXY),
        )
        .await
        .context("Envoy never opened a stream")?;
    let stream = opened.stream;
    let mut expect = vec![CLUSTER, ENDPOINT, LISTENER];
    if mode == TlsMode::Sds {
        expect.push(SECRET);
    }
    for t in &expect {
        util::ack_of_next(log, stream, 0, t).await?;
    }
    let first = util::settle(log, stream, 0, ROTATION_QUIET).await?;
    notes.push(format!(
        "Envoy start to everything ACKed: {:.0} ms",
        first.last_ack.duration_since(started).as_secs_f64() * 1e3
    ));
    let mut rows = Vec::new();

    // (a) intention changes -> LDS.
    let mut samples = Samples::default();
    for i in 0..o.reps {
        let action = if i % 2 == 0 { "deny" } else { "allow" };
        let before = log.last_seq();
        let t0 = Instant::now();
        c.put_intention("bench-src", "web", &json!({"Action": action}))?;
        let seen = util::ack_of_next(log, stream, before, LISTENER).await?;
        samples.add(t0, seen.pushed, seen.acked);
        util::settle(log, stream, before, Duration::from_millis(50)).await?;
    }
    rows.push(samples.row("intention change -> LDS ACK".to_owned()));

    // (b) health of one of `small` endpoints -> EDS.
    let mut critical = vec![false; o.large];
    rows.push(
        health_flips(&c, stream, o.small, o.reps, &mut critical)
            .await?
            .row(format!("health of 1 of {} endpoints -> EDS ACK", o.small)),
    );

    // (d) CA rotation -> the last push's ACK.
    let mut samples = Samples::default();
    let mut pushed = std::collections::BTreeSet::new();
    for _ in 0..o.reps {
        let before = log.last_seq();
        let t0 = Instant::now();
        c.rotate_ca(true)?;
        let s = util::settle(log, stream, before, ROTATION_QUIET).await?;
        samples.add(t0, s.first_push, s.last_ack);
        pushed.extend(s.types);
    }
    rows.push(samples.row(format!(
        "CA rotation -> ACK of its last push ({} endpoints)",
        o.small
    )));
    notes.push(format!(
        "a CA rotation pushed: {}",
        pushed
            .iter()
            .map(|t| t.rsplit('.').next().unwrap_or(t))
            .collect::<Vec<_>>()
            .join(", ")
    ));

    // Grow to `large` instances while Envoy is connected, then (c).
    let before = log.last_seq();
    let t = Instant::now();
    register_db(&c, o.small, o.large)?;
    let registered = t.elapsed();
    let s = util::settle(log, stream, before, ROTATION_QUIET).await?;
    notes.push(format!(
        "registering {} more db instances while Envoy is connected: {:.0} ms ({:.0} µs each); \
         ACK of the {}-endpoint EDS push {:.0} ms after the last one",
        o.large - o.small,
        registered.as_secs_f64() * 1e3,
        registered.as_secs_f64() * 1e6 / (o.large - o.small).max(1) as f64,
        o.large,
        s.last_ack
            .saturating_duration_since(t + registered)
            .as_secs_f64()
            * 1e3
    ));
    rows.push(
        health_flips(&c, stream, o.large, o.reps, &mut critical)
            .await?
            .row(format!("health of 1 of {} endpoints -> EDS ACK", o.large)),
    );
    if !log.nacks().is_empty() {
        bail!("NACKs: {:?}", log.nacks());
    }
    sim.shutdown().await;
    Ok(ModeResult { mode, rows, notes })
}

/// Flips the health of one of `n` instances per repetition; time to the EDS ACK.
async fn health_flips(
    c: &Control,
    stream: u64,
    n: usize,
    reps: usize,
    critical: &mut [bool],
) -> anyhow::Result<Samples> {
    let log = c.xds_log();
    let mut samples = Samples::default();
    for i in 0..reps {
        let k = (i * 7919) % n;
        critical[k] = !critical[k];
        let status = if critical[k] { "critical" } else { "passing" };
        let before = log.last_seq();
        let t0 = Instant::now();
        c.set_check(CheckUpdate {
            node: Some(format!("db-node-{k}")),
            check_id: format!("db-check-{k}"),
            status: status.into(),
            output: None,
        })?;
        let seen = util::ack_of_next(log, stream, before, ENDPOINT).await?;
        samples.add(t0, seen.pushed, seen.acked);
        util::settle(log, stream, before, Duration::from_millis(50)).await?;
    }
    Ok(samples)
}

/// Change -> ACK and change -> push durations of one kind of change.
#[derive(Default)]
struct Samples {
    acked: Vec<Duration>,
    pushed: Vec<Duration>,
}

impl Samples {
    fn add(&mut self, t0: Instant, pushed: Instant, acked: Instant) {
        self.pushed.push(pushed - t0);
        self.acked.push(acked - t0);
    }

    fn row(&self, what: String) -> (String, Summary, Summary) {
        (what, summarize(&self.acked), summarize(&self.pushed))
    }
}
