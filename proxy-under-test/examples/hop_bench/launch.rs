//! Starting one proxy kind as separate processes: the reference proxy (`proxy-under-test
//! -proxy-id ID -http-addr SIM`, default settings) or Envoy (bootstrapped by agent-sim's
//! `xds::bootstrap::render` as `consul connect envoy` would, configured over agent-sim's xDS:
//! the listeners, clusters, routes, RBAC and certificates Consul would push), one process per
//! sidecar; then waiting until every path through the kind works.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agent_sim::xds::bootstrap::{BootstrapParams, render};
use anyhow::{Context, bail};
use tokio::process::Command;

use crate::l4;
use crate::l7::{self, Proto};
use crate::mesh::{KindMesh, Sidecar};
use crate::procs::Proc;

/// How a kind's sidecars run.
#[derive(Debug, Clone)]
pub(crate) enum Driver {
    /// The reference proxy binary, with extra environment (e.g. `TOKIO_WORKER_THREADS`).
    Ref {
        bin: PathBuf,
        env: Vec<(String, String)>,
    },
    /// Envoy with `--concurrency N`.
    Envoy { bin: PathBuf, concurrency: u32 },
}

/// Which control plane a kind is configured by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plane {
    /// agent-sim as Consul renders it, no `mesh` entry (Envoy's upstream contexts: TLS 1.2 at
    /// most, sessions resumed).
    Consul,
    /// A second agent-sim: a `mesh` entry pinning TLS 1.3 both ways (Consul's own setting) and the
    /// sim-only `xds_no_tls_resumption` render option (not Consul's rendering): every hop
    /// handshake a full TLS 1.3 one, the comparison.
    Full,
}

/// A proxy kind under test.
#[derive(Debug, Clone)]
pub(crate) struct Kind {
    pub(crate) label: String,
    /// Service-name suffix.
    pub(crate) key: String,
    /// A's driver, and B's unless `b_driver` is set.
    pub(crate) driver: Driver,
    /// B's driver in a mixed mesh (Envoy calling the reference proxy, or the reverse).
    pub(crate) b_driver: Option<Driver>,
    pub(crate) plane: Plane,
}

impl Kind {
    /// Envoy on both ends: a base of the ratios.
    pub(crate) fn is_envoy(&self) -> bool {
        matches!(self.driver, Driver::Envoy { .. }) && self.b_driver.is_none()
    }

    /// A mixed mesh: one proxy calling the other.
    pub(crate) fn is_mixed(&self) -> bool {
        self.b_driver.is_some()
    }

    /// The driver of `role` (`a`, or a B role).
    fn driver_of(&self, role: &str) -> &Driver {
        match &self.b_driver {
            Some(b) if role != "a" => b,
            _ => &self.driver,
        }
    }
}

/// A kind's running processes.
pub(crate) struct Deployed {
    pub(crate) kind: Kind,
    pub(crate) mesh: KindMesh,
    /// A (the caller's sidecar).
    pub(crate) a: Proc,
    /// B per destination role (`tcp`, `h1`, `h2`, `grpc`, `v1`, `v2`).
    pub(crate) b: BTreeMap<&'static str, Proc>,
    /// Envoy admin addresses by role (`a` and the B roles).
    pub(crate) admin: BTreeMap<&'static str, SocketAddr>,
}

impl Deployed {
    pub(crate) fn is_envoy_kind(&self) -> bool {
        self.kind.is_envoy()
    }

    /// The processes carrying destination `dest` (A and its B, both api instances for `api`).
    pub(crate) fn pair(&self, dest: &str) -> Vec<&Proc> {
        let mut v = vec![&self.a];
        match dest {
            "api" => v.extend(["v1", "v2"].iter().filter_map(|r| self.b.get(r))),
            d => v.extend(self.b.get(d)),
        }
        v
    }

    /// CPU seconds of `dest`'s processes.
    pub(crate) fn cpu(&self, dest: &str) -> f64 {
        self.pair(dest).iter().map(|p| p.cpu_secs()).sum()
    }
}

fn start_one(
    kind: &Kind,
    sidecar: &Sidecar,
    sim: &agent_sim::Listening,
    dir: &Path,
    admin: &mut BTreeMap<&'static str, SocketAddr>,
    role: &'static str,
) -> anyhow::Result<Proc> {
    let name = format!("{}-{role}", kind.key);
    let log = dir.join(format!("{name}.log"));
    let cmd = match kind.driver_of(role) {
        Driver::Ref { bin, env } => {
            let mut c = Command::new(bin);
            c.args(["-proxy-id", &sidecar.proxy_id, "-http-addr"])
                .arg(sim.http_addr())
                .envs(env.iter().map(|(k, v)| (k, v)));
            c
        }
        Driver::Envoy { bin, concurrency } => {
            let admin_bind = crate::mesh::free_addr()?;
            admin.insert(role, admin_bind);
            let params = BootstrapParams {
                proxy_id: sidecar.proxy_id.clone(),
                cluster: sidecar.service.clone(),
                namespace: String::new(),
                partition: String::new(),
                datacenter: "dc1".into(),
                grpc_addr: sim.grpc_addr().context("the sim has no gRPC port")?,
                token: None,
                admin_bind,
                agent_ca_pem: None,
            };
            let cfg = dir.join(format!("{name}.json"));
            std::fs::write(&cfg, serde_json::to_vec_pretty(&render(&params))?)?;
            let mut c = Command::new(bin);
            c.arg("-c").arg(&cfg).args([
                "--disable-hot-restart",
                "--drain-time-s",
                "1",
                "--concurrency",
                &concurrency.to_string(),
            ]);
            c
        }
    };
    Proc::spawn(&name, cmd, Some(&log))
}

/// Starts every sidecar of `kind` and waits until each path through it works.
pub(crate) async fn deploy(
    kind: Kind,
    mesh: KindMesh,
    sim: &agent_sim::Listening,
    dir: &Path,
) -> anyhow::Result<Deployed> {
    let mut admin = BTreeMap::new();
    let mut b = BTreeMap::new();
    for (role, sc) in &mesh.servers {
        b.insert(*role, start_one(&kind, sc, sim, dir, &mut admin, role)?);
    }
    let a = start_one(&kind, &mesh.client, sim, dir, &mut admin, "a")?;
    let mut d = Deployed {
        kind,
        mesh,
        a,
        b,
        admin,
    };
    let e = d.mesh.entry.clone();
    for (what, dest) in [("tcp", "tcp"), ("h1", "h1"), ("h2", "h2"), ("grpc", "grpc")] {
        wait_path(&mut d, what, e[dest]).await?;
    }
    wait_path(&mut d, "api-h1", e["api"]).await?;
    wait_path(&mut d, "api-h2", e["api"]).await?;
    // `/probe` reaches v1 only: the split must reach v2 too before any load runs.
    wait_path(&mut d, "split", e["api"]).await?;
    Ok(d)
}

/// Both `v1` and `v2` answer `/bench` (the 50/50 split) within 40 requests on one connection.
async fn both_subsets(addr: SocketAddr) -> anyhow::Result<()> {
    let c = l7::connect(addr, Proto::H1).await?;
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..40 {
        seen.insert(l7::request(&c, Proto::H1, "/bench").await?);
        if seen.contains("v1") && seen.contains("v2") {
            return Ok(());
        }
    }
    bail!("the split answered only from {seen:?}")
}

/// One working request (or echo) through `addr`, retried for 30 s.
async fn wait_path(d: &mut Deployed, what: &str, addr: SocketAddr) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let attempt = async {
            match what {
                "tcp" => l4::one_connection(addr).await,
                "split" => both_subsets(addr).await,
                w => {
                    let (proto, path) = match w {
                        "h1" => (Proto::H1, "/bench"),
                        "h2" => (Proto::H2, "/bench"),
                        "grpc" => (Proto::Grpc, "/"),
                        "api-h1" => (Proto::H1, "/probe"),
                        _ => (Proto::H2, "/probe"),
                    };
                    let c = l7::connect(addr, proto).await?;
                    l7::request(&c, proto, path).await.map(drop)
                }
            }
        };
        let r = tokio::time::timeout(Duration::from_secs(5), attempt).await;
        match r {
            Ok(Ok(())) => return Ok(()),
            _ if Instant::now() < deadline => {
                d.a.check_alive()?;
                for p in d.b.values_mut() {
                    p.check_alive()?;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Ok(Err(e)) => bail!("{}: {what} never worked: {e:#}", d.kind.label),
            Err(_) => bail!("{}: {what} timed out", d.kind.label),
        }
    }
}
