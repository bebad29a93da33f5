//! The state store: one lock over all tables (catalog, config entries, CA, tokens, the agent's
//! leaf cache), one raft-like index, and change counters that blocking queries wait on: one for
//! the servers' data, one per service for its cached leaf, one for both (xDS streams).
//! It also models the agent's view of its servers: while they are unreachable, reads that the
//! agent would answer from its cache come from a snapshot frozen at the moment contact was lost.

mod catalog;
mod catalog_tables;
mod catalog_writes;
pub(crate) mod digest_memo;
mod leaf;
mod local_check;
mod reset;
mod server;
mod virtual_ip;

pub use catalog::CheckUpdate;
pub(crate) use catalog::HealthEntry;
pub(crate) use server::SERVER_NODE;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use time::OffsetDateTime;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::model::acl::Tokens;
use crate::model::ca::{Ca, CaConfig, Leaf};
use crate::model::config_entry::ConfigEntries;
use crate::model::intention::{self, Intention, MatchBy};
use crate::model::service::{HealthCheck, Node, NodeService};
use crate::state::body::Body;
use crate::state::config::SimConfig;
use crate::state::error::SimError;
use catalog_tables::CatalogTables;

/// Key of a service instance or check: (node name, ID).
pub(crate) type NodeKey = (String, String);

/// Everything the simulated agent and its servers know.
#[derive(Debug, Clone)]
pub(crate) struct State {
    /// The raft index: the index of the latest write.
    pub(crate) index: u64,
    pub(crate) ca: Ca,
    /// Index of the CA configuration.
    pub(crate) ca_config_index: u64,
    pub(crate) config: ConfigEntries,
    pub(crate) nodes: BTreeMap<String, Node>,
    pub(crate) services: BTreeMap<NodeKey, NodeService>,
    pub(crate) checks: BTreeMap<NodeKey, HealthCheck>,
    /// Per service name: index of the last change to its instances or their checks (also
    /// deregistration), as the health and catalog endpoints report it.
    pub(crate) service_index: HashMap<String, u64>,
    /// Index of the last catalog write of any kind (what an empty health result reports).
    pub(crate) catalog_index: u64,
    /// When each TTL check was last updated (for expiry).
    pub(crate) ttl_touched: HashMap<NodeKey, OffsetDateTime>,
    pub(crate) tokens: Tokens,
    /// The agent's leaf cache, by service name.
    pub(crate) leaves: BTreeMap<String, LeafEntry>,
    /// Virtual IPs by service name, as offsets from 240.0.0.0 (never freed; see `virtual_ip`).
    pub(crate) virtual_ips: HashMap<String, u32>,
    /// Derived data cached between writes (emptied by every write, and in every copy).
    pub(crate) memo: Memo,
    /// Counts every write except the agent's leaf-cache updates ([`Store::write_leaf_cache`]):
    /// with a service's leaf entry it tells whether a proxy's xDS resources may have changed.
    pub(crate) input_gen: u64,
    /// Prepared queries by ID (`state/prepared_queries.rs`).
    pub(crate) prepared_queries: BTreeMap<String, crate::model::prepared_query::PreparedQuery>,
    /// Index of the prepared-queries table.
    pub(crate) prepared_query_index: u64,
}

/// Per-state cache of derived data that hot endpoints read on every request.
#[derive(Debug, Default)]
pub(crate) struct Memo {
    roots: Mutex<Option<Arc<Body>>>,
    catalog: Mutex<Option<Arc<CatalogTables>>>,
}

impl Clone for Memo {
    /// A copy starts empty: its entries belong to the state they were derived from.
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl Memo {
    fn clear(&mut self) {
        *self.roots.get_mut() = None;
        *self.catalog.get_mut() = None;
    }
}

impl State {
    /// The intentions whose destination matches `target`, sorted. Not cached: the lookup reads
    /// two entries by name, and a cache of every destination's copy held hundreds of MiB at
    /// 100,000 intentions.
    pub(crate) fn destination_intentions(&self, target: &str) -> Arc<Vec<Intention>> {
        Arc::new(intention::matching(
            &self.config,
            MatchBy::Destination,
            target,
        ))
    }

    /// Lookup tables over the catalog (derived until the next write).
    pub(crate) fn catalog_tables(&self) -> Arc<CatalogTables> {
        self.memo
            .catalog
            .lock()
            .get_or_insert_with(|| Arc::new(CatalogTables::build(&self.services, &self.checks)))
            .clone()
    }

    /// The roots body (cached until the next write).
    pub(crate) fn roots_body(&self) -> Arc<Body> {
        self.memo
            .roots
            .lock()
            .get_or_insert_with(|| Arc::new(Body::new(self.ca.roots_json())))
            .clone()
    }
}

/// A cached leaf and when the agent will replace it.
#[derive(Debug, Clone)]
pub(crate) struct LeafEntry {
    pub(crate) leaf: Leaf,
    /// Renewal point: a random moment in [60%, 90%] of the lifetime.
    pub(crate) renew_at: OffsetDateTime,
    /// After a root rotation: when the agent re-issues (rotation + jitter).
    pub(crate) rotate_at: Option<OffsetDateTime>,
}

impl State {
    /// Allocates the next raft index.
    pub(crate) fn next_index(&mut self) -> u64 {
        self.index += 1;
        self.index
    }
}

/// The shared store.
#[derive(Debug)]
pub struct Store {
    pub(crate) cfg: SimConfig,
    state: RwLock<State>,
    /// Bumped by every write except leaf-cache writes: server-backed and agent-local reads.
    changes: watch::Sender<u64>,
    /// Bumped by every write, leaf-cache writes included: what xDS streams wait on.
    any_changes: watch::Sender<u64>,
    /// Per service: bumped by leaf-cache writes for that service, so a leaf-cache write wakes
    /// the blocked leaf queries of its own service, not every blocked query of the agent.
    leaf_changes: Mutex<HashMap<String, watch::Sender<u64>>>,
    /// Bumped when every blocked query must return at once (index reset, servers lost).
    abandon: watch::Sender<u64>,
    frozen: RwLock<Option<Frozen>>,
    cache_seen: Mutex<HashSet<String>>,
    /// The agent's `default_intention_policy` now (`cfg`'s until a restart changes it).
    intention_default: RwLock<Option<crate::state::config::IntentionDefault>>,
    rng: Mutex<StdRng>,
    /// Answer digests blocked queries compare against (`digest_memo`).
    pub(crate) digests: digest_memo::DigestMemo,
}

#[derive(Debug, Clone)]
struct Frozen {
    state: Arc<State>,
    since: Instant,
}

/// Which copy of the servers' data a read sees.
#[derive(Debug, Clone)]
pub(crate) enum View {
    /// Servers reachable: live data. `hit` tells whether the agent cache had this key before.
    Live { hit: bool },
    /// Servers unreachable, served from the agent cache.
    Cached { state: Arc<State>, age_secs: u64 },
}

impl Store {
    /// The agent's `default_intention_policy` now.
    pub(crate) fn intention_default(&self) -> Option<crate::state::config::IntentionDefault> {
        *self.intention_default.read()
    }

    /// Changes the agent's `default_intention_policy` (an agent restarted with other config).
    pub(crate) fn set_intention_default(&self, p: Option<crate::state::config::IntentionDefault>) {
        *self.intention_default.write() = p;
    }

    /// A fresh store with a bootstrapped CA.
    pub fn new(cfg: SimConfig) -> Result<Arc<Self>, SimError> {
        let mut rng = match cfg.seed {
            Some(s) => StdRng::seed_from_u64(s),
            None => StdRng::from_os_rng(),
        };
        let cluster_id = cfg.cluster_id.clone().unwrap_or_else(|| {
            uuid::Builder::from_random_bytes(rng.random())
                .into_uuid()
                .to_string()
        });
        let now = OffsetDateTime::now_utc();
        let mut index = 1;
        let node = catalog::agent_node(&cfg, &mut rng, index);
        index += 1;
        let ca_cfg = CaConfig {
            cluster_id,
            datacenter: cfg.datacenter.clone(),
            leaf_ttl: cfg.leaf_ttl,
            key_kind: cfg.ca_key_kind,
            intermediate: cfg.ca_intermediate,
            spiffe_ca_san: cfg.ca_spiffe_san,
            ..CaConfig::default()
        };
        let ca = Ca::new(ca_cfg, now, index, &mut rng).map_err(SimError::Ca)?;
        let (server, consul) = server::server_node(&cfg, 1);
        let server_key = (server.name.clone(), consul.id.clone());
        let intention_default = RwLock::new(cfg.default_intention_policy);
        let state = State {
            index,
            ca,
            ca_config_index: index,
            config: ConfigEntries::default(),
            nodes: BTreeMap::from([(node.name.clone(), node), (server.name.clone(), server)]),
            services: BTreeMap::from([(server_key, consul)]),
            checks: BTreeMap::from([
                (
                    (cfg.node_name.clone(), "serfHealth".to_owned()),
                    catalog::serf_health(&cfg.node_name, 1),
                ),
                (
                    (SERVER_NODE.to_owned(), "serfHealth".to_owned()),
                    catalog::serf_health(SERVER_NODE, 1),
                ),
            ]),
            service_index: HashMap::from([("consul".to_owned(), 1)]),
            catalog_index: index,
            ttl_touched: HashMap::new(),
            tokens: Tokens::new(&cfg.acl),
            leaves: BTreeMap::new(),
            virtual_ips: HashMap::new(),
            memo: Memo::default(),
            input_gen: 0,
            prepared_queries: BTreeMap::new(),
            prepared_query_index: 0,
        };
        Ok(Arc::new(Self {
            cfg,
            state: RwLock::new(state),
            changes: watch::channel(0).0,
            any_changes: watch::channel(0).0,
            leaf_changes: Mutex::new(HashMap::new()),
            abandon: watch::channel(0).0,
            frozen: RwLock::new(None),
            cache_seen: Mutex::new(HashSet::new()),
            intention_default,
            rng: Mutex::new(rng),
            digests: digest_memo::DigestMemo::default(),
        }))
    }

    /// Reads the live state.
    pub(crate) fn read<R>(&self, f: impl FnOnce(&State) -> R) -> R {
        f(&self.state.read())
    }

    /// Changes the live state and wakes every blocked query. The closure allocates indexes with
    /// [`State::next_index`] for what it writes.
    pub(crate) fn write<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let mut st = self.state.write();
        st.input_gen += 1;
        let out = f(&mut st);
        st.memo.clear();
        drop(st);
        self.changes.send_modify(|c| *c += 1);
        self.any_changes.send_modify(|c| *c += 1);
        out
    }

    /// A write that changes only the agent's leaf cache entry of `service` (`State::leaves`):
    /// wakes that service's blocked leaf queries and the xDS streams, not the other blocked
    /// queries (a root rotation re-issues thousands of leaves, and each re-issue woke every
    /// watcher of the agent). It leaves [`State::input_gen`] alone, so the xDS streams of other
    /// services' proxies can tell it changed nothing of theirs.
    pub(crate) fn write_leaf_cache<R>(&self, service: &str, f: impl FnOnce(&mut State) -> R) -> R {
        let mut st = self.state.write();
        let out = f(&mut st);
        drop(st);
        if let Some(tx) = self.leaf_changes.lock().get(service) {
            tx.send_modify(|c| *c += 1);
        }
        self.any_changes.send_modify(|c| *c += 1);
        out
    }

    /// Subscribes to the change counter of the servers' data (every write but leaf-cache ones).
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Subscribes to the leaf-cache writes of `service`.
    pub(crate) fn subscribe_leaf(&self, service: &str) -> watch::Receiver<u64> {
        self.leaf_changes
            .lock()
            .entry(service.to_owned())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe()
    }

    /// Subscribes to every write, leaf-cache writes included.
    pub(crate) fn subscribe_any(&self) -> watch::Receiver<u64> {
        self.any_changes.subscribe()
    }

    /// Subscribes to the abandon counter.
    pub(crate) fn subscribe_abandon(&self) -> watch::Receiver<u64> {
        self.abandon.subscribe()
    }

    /// Makes every blocked query return now.
    pub(crate) fn abandon_all(&self) {
        self.abandon.send_modify(|c| *c += 1);
        self.changes.send_modify(|c| *c += 1);
        self.any_changes.send_modify(|c| *c += 1);
    }

    /// Runs `f` with the store's random generator.
    pub(crate) fn with_rng<R>(&self, f: impl FnOnce(&mut StdRng) -> R) -> R {
        f(&mut self.rng.lock())
    }

    /// The agent lost its servers: freeze what its cache holds.
    pub(crate) fn servers_lost(&self) {
        let snapshot = Arc::new(self.state.read().clone());
        *self.frozen.write() = Some(Frozen {
            state: snapshot,
            since: Instant::now(),
        });
        self.abandon_all();
    }

    /// The servers are back.
    pub(crate) fn servers_back(&self) {
        *self.frozen.write() = None;
        self.abandon_all();
    }

    /// Whether the servers are unreachable.
    pub(crate) fn servers_down(&self) -> bool {
        self.frozen.read().is_some()
    }

    /// Which data a server-backed read under agent-cache key `key` sees: `cached` says whether
    /// the agent would answer it from its cache. `Err` = the request fails (no servers).
    pub(crate) fn view(&self, key: &str, cached: bool) -> Result<View, ()> {
        let frozen = self.frozen.read().clone();
        match frozen {
            None => {
                let hit = cached && {
                    let mut seen = self.cache_seen.lock();
                    seen.contains(key) || !seen.insert(key.to_owned())
                };
                Ok(View::Live { hit })
            }
            Some(f) if cached && self.cache_seen.lock().contains(key) => Ok(View::Cached {
                state: f.state,
                age_secs: f.since.elapsed().as_secs(),
            }),
            Some(_) => Err(()),
        }
    }

    /// Forgets the agent cache (agent restart).
    pub(crate) fn clear_agent_cache(&self) {
        self.cache_seen.lock().clear();
        self.write(|st| st.leaves.clear());
    }
}
