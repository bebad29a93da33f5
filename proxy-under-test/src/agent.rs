//! Control plane: the agent HTTP client and one task per blocking watch (registration by hash;
//! leaf, roots, intentions, discovery chains and endpoints by index, and in transparent mode the
//! source intentions and catalog services implicit upstreams come from (`implicit.rs`); the
//! default policy from agent/self), merged into immutable [`Snapshot`]s published on a `watch` channel. Once data
//! exists, agent failures never remove it (fail static); before it is complete, nothing is
//! published (fail closed).

pub(crate) mod assemble;
pub mod blocking;
mod client;
mod implicit;
pub(crate) mod recovery;
#[cfg(test)]
mod tests;
mod tls;
pub mod types;
mod watches;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use self::assemble::{
    ChainKey, HealthKey, QueryKey, State, all_targets, l4_only, query_poll_interval, targets_for,
};
pub(crate) use self::client::seg;
pub use self::client::{AgentClient, Blocking, REQUEST_TIMEOUT, http_timeout, normalize_addr};
pub use self::tls::AgentTls;
use self::types::{AgentService, CaRoots, CompiledChain, HealthEntry, LeafCert, QueryExecution};
use crate::authz::{DefaultPolicy, Intention, IntentionSet};
use crate::mesh::MeshEntry;
use crate::metrics::Metrics;
use crate::seam::Hooks;
use crate::snapshot::Snapshot;
use crate::tls::{Leaf, TrustRoots};

/// Errors talking to the agent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// Connection refused, reset, DNS failure...
    #[error("error connecting to the agent: {0}")]
    Transport(String),
    /// No answer within the HTTP timeout (wait + wait/16 + slack).
    #[error("agent request timed out")]
    Timeout,
    /// A non-200 answer, in the Go client's wording.
    #[error("Unexpected response code: {status} ({body})")]
    Status {
        /// HTTP status.
        status: u16,
        /// The agent's plain-text error body.
        body: String,
    },
    /// The body was not the expected JSON.
    #[error("cannot decode agent response: {0}")]
    Decode(String),
    /// `CONSUL_HTTP_ADDR` uses a scheme this proxy does not speak.
    #[error(
        "unsupported agent address {0:?}: only http://host:port and https://host:port are supported"
    )]
    UnsupportedAddress(String),
    /// The TLS settings for an `https://` agent are unusable (files, names).
    #[error("agent TLS: {0}")]
    Tls(String),
}

/// Watch timing (defaults follow Consul's guidance; tests shorten them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// `wait` sent with every blocking query.
    pub wait: Duration,
    /// First retry delay after an error.
    pub backoff_base: Duration,
    /// Retry delay cap.
    pub backoff_max: Duration,
    /// Token-bucket refill rate per watch (burst 2).
    pub rate_per_second: f64,
    /// How often agent/self is re-read for the default policy.
    pub policy_refresh: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            wait: Duration::from_secs(300),
            backoff_base: Duration::from_millis(250),
            backoff_max: Duration::from_secs(30),
            rate_per_second: 1.0,
            policy_refresh: Duration::from_secs(60),
        }
    }
}

/// Messages from watch tasks to the control plane.
#[derive(Debug)]
pub(crate) enum Update {
    Service(Box<AgentService>),
    Leaf(Box<LeafCert>),
    Roots(CaRoots),
    Intentions(Vec<Intention>),
    Policy(DefaultPolicy),
    Chain(ChainKey, Box<CompiledChain>),
    Health(HealthKey, Vec<HealthEntry>),
    Query(QueryKey, Box<QueryExecution>),
    Mesh(Option<Box<MeshEntry>>),
    /// Transparent mode: the intentions with the proxy's service as the source.
    SourceIntentions(Vec<Intention>),
    /// Transparent mode: the catalog's service names.
    CatalogServices(Vec<String>),
    JwtProviders(Vec<crate::jwt::provider::ProviderEntry>),
}

/// Aborts its task when dropped.
#[derive(Debug)]
struct Task(JoinHandle<()>);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The running control plane; dropping it stops every watch.
#[derive(Debug)]
pub struct ControlPlane {
    snapshots: watch::Receiver<Option<Arc<Snapshot>>>,
    _task: Task,
}

impl ControlPlane {
    /// Starts the watches for proxy `proxy_id`, given its first registration read and content
    /// hash (see [`AgentClient::service`]).
    pub fn spawn(
        client: AgentClient,
        initial: AgentService,
        hash: String,
        timing: Timing,
        metrics: Arc<Metrics>,
    ) -> Self {
        let (tx, snapshots) = watch::channel(None);
        let task = tokio::spawn(run(client, initial, hash, timing, metrics, tx));
        Self {
            snapshots,
            _task: Task(task),
        }
    }

    /// The snapshot channel for the data plane.
    pub fn snapshots(&self) -> watch::Receiver<Option<Arc<Snapshot>>> {
        self.snapshots.clone()
    }
}

struct Watches {
    _fixed: Vec<Task>,
    destination: Option<(String, Task, Task)>,
    /// Transparent mode: the implicit-upstream watches, for this service.
    implicit: Option<(String, [Task; 2])>,
    chains: BTreeMap<ChainKey, Task>,
    health: BTreeMap<HealthKey, Task>,
    queries: BTreeMap<QueryKey, Task>,
}

async fn run(
    client: AgentClient,
    initial: AgentService,
    hash: String,
    timing: Timing,
    metrics: Arc<Metrics>,
    out: watch::Sender<Option<Arc<Snapshot>>>,
) {
    let timing = client.hooks.timing(timing);
    let (tx, mut rx) = mpsc::channel::<Update>(64);
    let proxy_id = initial.id.clone();
    let mut state = State {
        hooks: Hooks::from_client(&client),
        ..State::default()
    };
    apply(&mut state, Update::Service(Box::new(initial)), &metrics);
    let (c, t, m) = (client.clone(), timing, metrics.clone());
    let mut w = Watches {
        _fixed: vec![
            Task(tokio::spawn(watches::service_watch(
                c.clone(),
                proxy_id,
                hash,
                t,
                m.clone(),
                tx.clone(),
            ))),
            Task(tokio::spawn(watches::policy_watch(
                c.clone(),
                t,
                m.clone(),
                tx.clone(),
            ))),
            Task(tokio::spawn(watches::index_watch(
                "mesh",
                t,
                m.clone(),
                tx.clone(),
                |e: Option<MeshEntry>| Update::Mesh(e.map(Box::new)),
                {
                    let c = c.clone();
                    move |i| {
                        let c = c.clone();
                        async move { c.mesh(i, t.wait).await }
                    }
                },
            ))),
            Task(tokio::spawn(watches::index_watch(
                "jwt_providers",
                t,
                m.clone(),
                tx.clone(),
                Update::JwtProviders,
                {
                    let c = c.clone();
                    move |i| {
                        let c = c.clone();
                        async move { c.jwt_providers(i, t.wait).await }
                    }
                },
            ))),
            Task(tokio::spawn(watches::index_watch(
                "roots",
                t,
                m,
                tx.clone(),
                Update::Roots,
                move |i| {
                    let c = c.clone();
                    async move { c.roots(i, t.wait).await }
                },
            ))),
        ],
        destination: None,
        implicit: None,
        chains: BTreeMap::new(),
        health: BTreeMap::new(),
        queries: BTreeMap::new(),
    };
    loop {
        reconcile(&state, &mut w, &client, timing, &metrics, &tx);
        if let Some(snap) = state.snapshot() {
            if out.borrow().is_none() {
                tracing::info!(service = %snap.service, "configuration complete");
            }
            metrics.leaf_expiry(snap.leaf.not_after_unix);
            out.send_replace(Some(Arc::new(snap)));
        }
        let Some(update) = rx.recv().await else {
            return;
        };
        apply(&mut state, update, &metrics);
        // Drain whatever else is queued before rebuilding.
        while let Ok(u) = rx.try_recv() {
            apply(&mut state, u, &metrics);
        }
        if out.is_closed() {
            return;
        }
    }
}

fn apply(state: &mut State, update: Update, _metrics: &Metrics) {
    match update {
        Update::JwtProviders(entries) => {
            tracing::info!(providers = entries.len(), "jwt-provider entries loaded");
            let weakened = state.hooks.jwt_weakened();
            state.jwt = Some(Arc::new(crate::jwt::Verifier::new(entries, weakened)));
        }
        Update::Mesh(entry) => {
            tracing::info!(present = entry.is_some(), "mesh config entry loaded");
            state.mesh = Some(entry.map(|e| *e));
        }
        Update::Service(svc) => {
            if svc.kind != "connect-proxy" || svc.proxy.is_none() {
                tracing::error!(id = %svc.id, kind = %svc.kind, "registration is not a connect-proxy; ignoring it");
                return;
            }
            state.service = Some(*svc);
        }
        Update::Leaf(leaf) => match Leaf::from_pem(&leaf.cert_pem, &leaf.private_key_pem) {
            Ok(l) => {
                let Some(l) = state.hooks.leaf(l) else {
                    return;
                };
                tracing::info!(serial = %leaf.serial_number, valid_before = %leaf.valid_before, key = %l.key_kind, chain = l.chain_len(), "leaf certificate loaded");
                state.leaf = Some(l);
            }
            Err(e) => {
                tracing::error!(error = %e, "unusable leaf certificate; keeping the previous one");
            }
        },
        Update::Roots(roots) => {
            let pems = roots.roots.iter().map(|r| r.root_cert.as_str());
            let pems = pems.filter(|pem| state.hooks.root_usable(pem));
            match TrustRoots::from_pems(pems, &roots.trust_domain) {
                Ok(r) => {
                    let r = r.with_intermediate_pems(
                        roots
                            .roots
                            .iter()
                            .flat_map(|r| r.intermediate_certs.iter().map(String::as_str)),
                    );
                    tracing::info!(count = roots.roots.len(), intermediates = r.intermediates.len(), active = %roots.active_root_id, "CA roots loaded");
                    state.roots = Some(r);
                }
                Err(e) => {
                    tracing::error!(error = %e, "unusable CA roots; keeping the previous ones");
                }
            }
        }
        Update::Intentions(list) => {
            let dest = state
                .service
                .as_ref()
                .and_then(|s| s.proxy.as_ref())
                .map(|p| p.destination_service_name.clone())
                .unwrap_or_default();
            tracing::info!(count = list.len(), destination = %dest, "intentions loaded");
            let set = IntentionSet::new(&dest, list).with_hooks(state.hooks.authz());
            state.intentions = Some(Arc::new(set));
        }
        Update::Policy(p) => {
            if state.policy != Some(p) {
                tracing::info!(allow = p.allow, source = ?p.source, "default intention policy");
            }
            state.policy = Some(p);
        }
        Update::Chain(key, chain) => {
            state.chains.insert(key, *chain);
        }
        Update::Health(key, entries) => {
            state.health.insert(key, entries);
        }
        Update::SourceIntentions(list) => {
            tracing::debug!(count = list.len(), "source intentions loaded");
            state.source_intentions = Some(list);
        }
        Update::CatalogServices(names) => {
            tracing::debug!(count = names.len(), "catalog services loaded");
            state.catalog = Some(names);
        }
        Update::Query(key, exec) => {
            tracing::debug!(query = %key.0, instances = exec.nodes.len(), "prepared query executed");
            state.queries.insert(key, *exec);
        }
    }
}

/// Starts and stops watches so they match the current registration and chains.
fn reconcile(
    state: &State,
    w: &mut Watches,
    client: &AgentClient,
    t: Timing,
    metrics: &Arc<Metrics>,
    tx: &mpsc::Sender<Update>,
) {
    let Some(svc) = &state.service else { return };
    let Some(proxy) = &svc.proxy else { return };
    let dest = proxy.destination_service_name.clone();
    if w.destination.as_ref().map(|d| &d.0) != Some(&dest) {
        let (c1, c2, d1, d2) = (client.clone(), client.clone(), dest.clone(), dest.clone());
        let leaf = tokio::spawn(watches::index_watch(
            "leaf",
            t,
            metrics.clone(),
            tx.clone(),
            |l| Update::Leaf(Box::new(l)),
            move |i| {
                let (c, d) = (c1.clone(), d1.clone());
                async move { c.leaf(&d, i, t.wait).await }
            },
        ));
        let ixn = tokio::spawn(watches::index_watch(
            "intentions",
            t,
            metrics.clone(),
            tx.clone(),
            Update::Intentions,
            move |i| {
                let (c, d) = (c2.clone(), d2.clone());
                async move { c.intentions(&d, i, t.wait).await }
            },
        ));
        w.destination = Some((dest.clone(), Task(leaf), Task(ixn)));
    }
    // Transparent mode derives upstreams from intentions (Consul's `IntentionUpstreams`).
    if proxy.mode != "transparent" {
        w.implicit = None;
    } else if w.implicit.as_ref().map(|i| &i.0) != Some(&dest) {
        let tasks = watches::implicit_watches(client, &dest, t, metrics, tx).map(Task);
        w.implicit = Some((dest, tasks));
    }
    let (queries, specs): (Vec<_>, Vec<_>) = state.specs(svc).into_iter().partition(|s| s.query);
    let interval = query_poll_interval(&proxy.config);
    w.queries
        .retain(|k, _| queries.iter().any(|s| &s.query_key() == k));
    for spec in &queries {
        let key = spec.query_key();
        if let std::collections::btree_map::Entry::Vacant(slot) = w.queries.entry(key.clone()) {
            slot.insert(Task(tokio::spawn(watches::query_watch(
                client.clone(),
                key,
                interval,
                t,
                metrics.clone(),
                tx.clone(),
            ))));
        }
    }
    w.chains
        .retain(|k, _| specs.iter().any(|s| &s.chain_key() == k));
    let mut wanted_health = Vec::new();
    for spec in &specs {
        let key = spec.chain_key();
        if !w.chains.contains_key(&key) {
            let (c, k2) = (client.clone(), key.clone());
            let wrap_key = key.clone();
            // An L4-only proxy asks for every chain compiled as TCP (Consul's guide: "set the
            // OverrideProtocol value to tcp"); otherwise, as Consul's proxycfg, the upstream's
            // configured protocol overrides the chain's.
            let protocol = if l4_only(&proxy.config) && client.hooks.l4_override() {
                Some("tcp".to_owned())
            } else {
                spec.config
                    .get("protocol")
                    .and_then(|p| p.as_str())
                    .map(str::to_owned)
            };
            let task = tokio::spawn(watches::index_watch(
                "discovery_chain",
                t,
                metrics.clone(),
                tx.clone(),
                move |r: types::ChainResponse| Update::Chain(wrap_key.clone(), Box::new(r.chain)),
                move |i| {
                    let (c, k, p) = (c.clone(), k2.clone(), protocol.clone());
                    async move { c.discovery_chain(&k.0, &k.1, p.as_deref(), i, t.wait).await }
                },
            ));
            w.chains.insert(key.clone(), Task(task));
        }
        let (targets, _) = targets_for(spec, state.chains.get(&key), &svc.datacenter);
        wanted_health.extend(targets.iter().map(|t| t.health_key(&svc.datacenter)));
        if let Some(chain) = state.chains.get(&key) {
            let all = all_targets(chain, &state.hooks);
            wanted_health.extend(all.iter().map(|t| t.health_key(&svc.datacenter)));
        }
    }
    w.health.retain(|k, _| wanted_health.contains(k));
    for key in wanted_health {
        if w.health.contains_key(&key) {
            continue;
        }
        let (c, k2, wrap_key) = (client.clone(), key.clone(), key.clone());
        let task = tokio::spawn(watches::index_watch(
            "health",
            t,
            metrics.clone(),
            tx.clone(),
            move |e| Update::Health(wrap_key.clone(), e),
            move |i| {
                let (c, k) = (c.clone(), k2.clone());
                async move { c.health_connect(&k.0, &k.1, &k.2, i, t.wait).await }
            },
        ));
        w.health.insert(key, Task(task));
    }
}
