//! Part 2: 1,000 Envoy-like delta ADS streams against one sim. The clients run in a child
//! process (this program with `--ads-clients`), so the sim's RSS and CPU time are its own; each
//! client is a tonic client on its own HTTP/2 connection that subscribes like Envoy (CDS and LDS
//! wildcard, EDS for the EDS clusters it is sent) and ACKs every response.

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::time::Duration;

use agent_sim::xds::types::{CLUSTER, ENDPOINT, LISTENER};
use agent_sim::xds::{XdsEvent, XdsLog};
use agent_sim::{AgentSim, Control};
use anyhow::{Context, bail};
use envoy_types::pb::envoy::config::cluster::v3::{Cluster, cluster};
use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::DeltaDiscoveryRequest;
use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use prost::Message;
use serde_json::json;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;

use crate::util::{self, WAIT};

/// How often the parent reads the xDS log while waiting for 1,000 streams.
const POLL: Duration = Duration::from_millis(20);
/// No push for this long after everything is ACKed: the change is fully delivered.
const QUIET: Duration = Duration::from_millis(1000);

/// A change applied to the sim.
type Change = fn(&Control) -> anyhow::Result<()>;

/// One row of the report.
pub(crate) struct Phase {
    pub(crate) what: String,
    pub(crate) wall: Duration,
    pub(crate) cpu: Duration,
    pub(crate) rss_mib: f64,
    pub(crate) pushes: usize,
    /// Resource builds by the streams during the phase.
    pub(crate) builds: u64,
}

/// Results of one layout (one sidecar per stream, or all streams for one sidecar).
pub(crate) struct Outcome {
    pub(crate) layout: &'static str,
    pub(crate) rss_before_mib: f64,
    pub(crate) phases: Vec<Phase>,
    pub(crate) hwm_mib: f64,
}

/// Runs part 2 with `n` streams; `shared`: all streams for one sidecar.
pub(crate) async fn run(n: usize, shared: bool) -> anyhow::Result<Outcome> {
    let sim = AgentSim::builder()
        .grpc_bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .run_checks(false)
        .ca_change_jitter(Duration::ZERO)
        .start()
        .await?;
    let c = sim.control().clone();
    for i in 0..10 {
        c.catalog_register(&json!({
            "Node": format!("db-node-{i}"), "Address": format!("127.0.1.{}", i + 1),
            "Service": {"Kind": "connect-proxy", "ID": "db-sidecar-proxy", "Service": "db-sidecar-proxy",
                "Port": 21000, "Proxy": {"DestinationServiceName": "db"}}
        }))?;
    }
    let sidecars = if shared { 1 } else { n };
    for i in 0..sidecars {
        c.register(&json!({
            "Name": format!("svc-{i}"), "Port": 8080,
            "Connect": {"SidecarService": {"Port": 21000, "Proxy": {
                "Upstreams": [{"DestinationName": "db", "LocalBindPort": 9191}]}}}
        }))?;
    }
    let log = c.xds_log();
    let rss_before_mib = util::mib(util::status_kib("VmRSS:"));
    let mut tracker = Tracker::default();
    let grpc = sim.grpc_addr().context("no gRPC port")?;
    let mut child = tokio::process::Command::new(std::env::current_exe()?)
        .args([
            "--ads-clients",
            &grpc.to_string(),
            &n.to_string(),
            if shared { "shared" } else { "each" },
        ])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let mut phases = Vec::new();
    let (cpu0, t0, b0) = (util::cpu_time(), Instant::now(), log.builds());
    let (wall, pushes) = tracker.until_converged(log, n, t0, &mut child).await?;
    phases.push(Phase {
        what: format!("{n} streams open, everything ACKed"),
        wall,
        cpu: util::cpu_time() - cpu0,
        rss_mib: util::mib(util::status_kib("VmRSS:")),
        pushes,
        builds: log.builds() - b0,
    });
    let changes: [(&str, Change); 2] = [
        ("CA rotation (cross-signed)", |c| Ok(c.rotate_ca(true)?)),
        ("proxy-defaults change", |c| {
            Ok(c.upsert_config_entry(&json!({
                "Kind": "proxy-defaults", "Name": "global",
                "Config": {"local_connect_timeout_ms": 4321}
            }))?)
        }),
    ];
    for (what, change) in changes {
        tracker.reset_pushed();
        let (cpu0, t0, b0) = (util::cpu_time(), Instant::now(), log.builds());
        change(&c)?;
        let (wall, pushes) = tracker.until_converged(log, n, t0, &mut child).await?;
        phases.push(Phase {
            what: format!("{what}: every stream's pushes ACKed"),
            wall,
            cpu: util::cpu_time() - cpu0,
            rss_mib: util::mib(util::status_kib("VmRSS:")),
            pushes,
            builds: log.builds() - b0,
        });
    }
    let hwm_mib = util::mib(util::status_kib("VmHWM:"));
    let _ = child.kill().await;
    sim.shutdown().await;
    Ok(Outcome {
        layout: if shared {
            "all streams for one sidecar"
        } else {
            "one sidecar per stream"
        },
        rss_before_mib,
        phases,
        hwm_mib,
    })
}

#[derive(Default)]
struct StreamState {
    open: BTreeSet<String>,
    acked: BTreeSet<String>,
    pushed_since_reset: bool,
}

/// Follows the xDS log of every stream.
#[derive(Default)]
struct Tracker {
    cursor: u64,
    streams: HashMap<u64, StreamState>,
}

impl Tracker {
    fn reset_pushed(&mut self) {
        for s in self.streams.values_mut() {
            s.pushed_since_reset = false;
        }
    }

    /// Reads new log entries; returns how many responses they held and whether one was seen.
    fn consume(&mut self, log: &XdsLog) -> anyhow::Result<(usize, bool)> {
        let mut pushes = 0;
        let mut acked = false;
        for e in log.since(self.cursor) {
            self.cursor = e.seq;
            let s = self.streams.entry(e.stream).or_default();
            match e.event {
                XdsEvent::Response { nonce, .. } => {
                    s.open.insert(nonce);
                    s.pushed_since_reset = true;
                    pushes += 1;
                }
                XdsEvent::Ack { type_url, nonce } if s.open.remove(&nonce) => {
                    s.acked.insert(type_url);
                    acked = true;
                }
                XdsEvent::Nack { message, .. } => bail!("NACK: {message}"),
                XdsEvent::Closed { reason, .. } => bail!("stream {} closed: {reason}", e.stream),
                _ => {}
            }
        }
        if log.dropped() > 0 {
            bail!("the xDS log dropped entries; raise its capacity");
        }
        Ok((pushes, acked))
    }

    fn converged(&self, n: usize) -> bool {
        self.streams.len() >= n
            && self.streams.values().all(|s| {
                s.open.is_empty()
                    && s.pushed_since_reset
                    && [CLUSTER, ENDPOINT, LISTENER]
                        .iter()
                        .all(|t| s.acked.contains(*t))
            })
    }

    /// Waits until all `n` streams pushed something since the last reset, ACKed it all, and no
    /// push followed for [`QUIET`]; returns the time of the last ACK after `t0` and the pushes.
    async fn until_converged(
        &mut self,
        log: &XdsLog,
        n: usize,
        t0: Instant,
        child: &mut tokio::process::Child,
    ) -> anyhow::Result<(Duration, usize)> {
        let deadline = t0 + WAIT;
        let mut pushes = 0;
        let mut last_ack = None;
        let mut quiet_since: Option<Instant> = None;
        loop {
            let (p, acked) = self.consume(log)?;
            pushes += p;
            if acked {
                last_ack = Some(Instant::now());
            }
            if p > 0 || !self.converged(n) {
                quiet_since = None;
            } else if quiet_since.get_or_insert_with(Instant::now).elapsed() >= QUIET {
                let at = last_ack.context("converged without an ACK")?;
                return Ok((at - t0, pushes));
            }
            if let Some(status) = child.try_wait()? {
                bail!("the client process exited: {status}");
            }
            if Instant::now() > deadline {
                bail!(
                    "not converged after {:?}: {} streams seen, {} unconverged",
                    WAIT,
                    self.streams.len(),
                    self.streams
                        .values()
                        .filter(|s| !s.open.is_empty() || !s.pushed_since_reset)
                        .count()
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

// === the child process ===

/// Child mode: `n` delta ADS clients against `addr`, until killed.
pub(crate) async fn clients(args: &[String]) -> anyhow::Result<()> {
    util::raise_fd_limit();
    let addr: SocketAddr = args.first().context("addr")?.parse()?;
    let n: usize = args.get(1).context("n")?.parse()?;
    let shared = args.get(2).map(String::as_str) == Some("shared");
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..n {
        let node = format!("svc-{}-sidecar-proxy", if shared { 0 } else { i });
        tasks.spawn(client(addr, node));
    }
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    Ok(())
}

fn request(type_url: &str) -> DeltaDiscoveryRequest {
    DeltaDiscoveryRequest {
        type_url: type_url.into(),
        ..Default::default()
    }
}

/// One Envoy-like stream: CDS and LDS wildcard, EDS for every EDS cluster, ACK everything.
async fn client(addr: SocketAddr, node: String) -> anyhow::Result<()> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))?
        .connect()
        .await?;
    let mut client = AggregatedDiscoveryServiceClient::new(channel);
    let (tx, rx) = mpsc::channel(64);
    let mut first = request(CLUSTER);
    first.node = Some(Node {
        id: node,
        ..Default::default()
    });
    tx.send(first).await?;
    tx.send(request(LISTENER)).await?;
    let mut inbound = client
        .delta_aggregated_resources(ReceiverStream::new(rx))
        .await?
        .into_inner();
    let mut eds: BTreeSet<String> = BTreeSet::new();
    while let Some(resp) = inbound.message().await? {
        let mut new_eds = Vec::new();
        if resp.type_url == CLUSTER {
            for r in &resp.resources {
                let Some(any) = &r.resource else { continue };
                let c = Cluster::decode(any.value.as_slice())?;
                let is_eds = matches!(c.cluster_discovery_type,
                    Some(cluster::ClusterDiscoveryType::Type(t)) if t == cluster::DiscoveryType::Eds as i32);
                if is_eds && eds.insert(c.name.clone()) {
                    new_eds.push(c.name);
                }
            }
        }
        let mut ack = request(&resp.type_url);
        ack.response_nonce = resp.nonce;
        tx.send(ack).await?;
        if !new_eds.is_empty() {
            let mut sub = request(ENDPOINT);
            sub.resource_names_subscribe = new_eds;
            tx.send(sub).await?;
        }
    }
    Ok(())
}
