//! One delta ADS stream: reads requests, rebuilds the proxy's resources on every store change
//! that touched their inputs (and at `refresh_at`), sharing one build per proxy and inputs
//! between its streams, feeds the [`DeltaStream`] state machine, sends what it answers, checks
//! the token as Consul does, and records everything in the xDS log. Faults: hung (nothing is
//! processed or sent until it ends), latency (each response delayed), servers unreachable (the
//! last snapshot is kept and no update is sent until they return).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse,
};
use parking_lot::Mutex;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tonic::{Status, Streaming};

use super::auth;
use super::source::{Inputs, Source};
use crate::state::control::Control;
use crate::state::faults::FaultSet;
use crate::state::xds_log::XdsEvent;
use crate::xds::delta::{DeltaStream, Received};
use crate::xds::resources::ProxyResources;

/// The gRPC path of delta ADS: latency faults whose prefix matches it (or that have no prefix)
/// delay every xDS response.
pub(crate) const DELTA_PATH: &str =
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources";

/// How soon a `refresh_at` that is already past is tried again.
const OVERDUE_RETRY: Duration = Duration::from_secs(1);

/// Consul's `DefaultAuthCheckFrequency`: ACLs are re-checked after this much idleness.
const AUTH_CHECK_FREQUENCY: Duration = Duration::from_secs(300);

/// The last snapshot of each proxy, shared by its streams (Consul's proxycfg state lives per
/// proxy in the agent, not per stream): reused by another stream of the proxy while its inputs
/// are unchanged, kept while the servers are unreachable, forgotten when the agent goes down
/// (restart).
pub(crate) type SnapshotCache = Mutex<BTreeMap<String, Cached>>;

/// A proxy's last snapshot and the inputs it was built from (`None`: not reusable).
#[derive(Debug, Clone)]
pub(crate) struct Cached {
    inputs: Option<Inputs>,
    snap: ProxyResources,
}

pub(crate) type Tx = mpsc::Sender<Result<DeltaDiscoveryResponse, Status>>;

/// Everything one stream needs.
pub(crate) struct StreamCtx {
    pub(crate) control: Control,
    pub(crate) source: Arc<dyn Source>,
    pub(crate) cache: Arc<SnapshotCache>,
    pub(crate) faults: watch::Receiver<Arc<FaultSet>>,
    pub(crate) stream: u64,
    pub(crate) token: Option<String>,
    pub(crate) peer: Option<String>,
}

enum Event {
    Request(Box<Result<Option<DeltaDiscoveryRequest>, Status>>),
    /// Look again; `forced`: even if the inputs look unchanged (a timer or a fault).
    Rebuild {
        forced: bool,
    },
    AuthTimer,
    Closed,
}

/// Runs the stream to its end and records how it ended.
pub(crate) async fn run(mut ctx: StreamCtx, mut inbound: Streaming<DeltaDiscoveryRequest>, tx: Tx) {
    let (code, reason) = match drive(&mut ctx, &mut inbound, &tx).await {
        // A connection cut by the agent-down fault surfaces as a failed receive; say why.
        Ok(_) if ctx.faults.borrow().down => (0, "agent down: connection cut".to_owned()),
        Ok(reason) => (0, reason),
        Err(status) => {
            let out = (status.code() as i32, status.message().to_owned());
            let _ = tx.send(Err(status)).await;
            out
        }
    };
    tracing::debug!(stream = ctx.stream, code, %reason, "xds stream closed");
    ctx.control
        .xds_log()
        .record(ctx.stream, XdsEvent::Closed { code, reason });
}

/// Waits while the agent is hung; false when the client went away meanwhile.
async fn wait_not_hung(faults: &mut watch::Receiver<Arc<FaultSet>>, tx: &Tx) -> bool {
    loop {
        if !faults.borrow_and_update().hung {
            return true;
        }
        tokio::select! {
            _ = tx.closed() => return false,
            changed = faults.changed() => if changed.is_err() { return true; },
        }
    }
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn refresh_instant(r: &ProxyResources) -> Option<Instant> {
    let at = r.refresh_at?;
    let wait = at - time::OffsetDateTime::now_utc();
    // A moment already past (a renewal that is due but not done yet) is retried after a pause
    // instead of spinning.
    let wait = Duration::try_from(wait)
        .ok()
        .filter(|w| !w.is_zero())
        .unwrap_or(OVERDUE_RETRY);
    Some(Instant::now() + wait)
}

async fn drive(
    ctx: &mut StreamCtx,
    inbound: &mut Streaming<DeltaDiscoveryRequest>,
    tx: &Tx,
) -> Result<String, Status> {
    let log = ctx.control.xds_log.clone();
    let store = ctx.control.store.clone();
    let mut delta = DeltaStream::new();
    let mut proxy_id: Option<String> = None;
    let mut destination: Option<String> = None;
    let mut changes = ctx.source.changes();
    let mut changes_open = true;
    let mut refresh: Option<Instant> = None;
    let mut auth_deadline: Option<Instant> = None;
    let mut servers_were_down = false;
    let mut last_inputs: Option<Inputs> = None;
    loop {
        let event = tokio::select! {
            _ = tx.closed() => Event::Closed,
            msg = inbound.message() => Event::Request(Box::new(msg)),
            r = changes.changed(), if proxy_id.is_some() && changes_open => {
                // A source that stops signalling leaves refresh_at and faults as triggers.
                changes_open = r.is_ok();
                Event::Rebuild { forced: false }
            }
            () = sleep_until_opt(refresh), if refresh.is_some() => {
                refresh = None;
                Event::Rebuild { forced: true }
            }
            () = sleep_until_opt(auth_deadline), if auth_deadline.is_some() => Event::AuthTimer,
            r = ctx.faults.changed() => {
                if r.is_err() { return Ok("fault channel closed".into()); }
                Event::Rebuild { forced: true }
            }
        };
        if !wait_not_hung(&mut ctx.faults, tx).await {
            return Ok("connection closed".into());
        }
        let mut rebuild = false;
        let mut forced = false;
        match event {
            Event::Request(msg) => match *msg {
                Ok(None) => return Ok("client ended the stream".into()),
                Err(status) => return Ok(format!("receive failed: {status}")),
                Ok(Some(req)) => {
                    if proxy_id.is_none() {
                        if req.type_url.is_empty() {
                            return Err(Status::invalid_argument("type URL is required for ADS"));
                        }
                        // Newest Consul (`deltaSession.AcceptDiscoveryRequest`).
                        let Some(node) = &req.node else {
                            return Err(Status::unknown("cannot continue without a node"));
                        };
                        proxy_id = Some(node.id.clone());
                        log.record(
                            ctx.stream,
                            XdsEvent::Opened {
                                node_id: node.id.clone(),
                                token: ctx.token.clone(),
                                peer: ctx.peer.clone(),
                            },
                        );
                        rebuild = true;
                    }
                    let received = delta
                        .recv(&req)
                        .map_err(|e| Status::invalid_argument(e.to_string()))?;
                    record_request(&log, ctx.stream, &req, &received);
                    if !received.triggers_send() {
                        continue;
                    }
                }
            },
            Event::Closed => return Ok("connection closed".into()),
            Event::Rebuild { forced: f } => {
                rebuild = true;
                forced = f;
            }
            Event::AuthTimer => {
                if let Some(dest) = &destination {
                    auth::authorize(&store, ctx.token.as_deref(), dest)?;
                }
                auth_deadline = Some(Instant::now() + AUTH_CHECK_FREQUENCY);
                continue;
            }
        }
        let Some(id) = proxy_id.as_deref() else {
            continue;
        };
        // The fault set is the source of truth (the store's frozen copy follows it a moment
        // later, and its wake-up may come from a store the source does not watch).
        let servers_down = ctx.faults.borrow().servers_down_since.is_some();
        if rebuild || !delta.ready() || (servers_were_down && !servers_down) {
            let inputs = ctx.source.inputs(id).filter(|_| !servers_down);
            // A wake-up for a write none of this proxy's inputs saw (another service's leaf
            // issued, say) needs no rebuild: the same inputs build the same resources.
            let unchanged = !forced && delta.ready() && inputs.is_some() && inputs == last_inputs;
            if !unchanged
                && let Some(snap) = snapshot(ctx, id, servers_down, delta.ready(), inputs.as_ref())?
            {
                refresh = refresh_instant(&snap);
                delta.set_resources(snap.resources);
                destination = auth::destination_of(&store, id).or(destination);
                last_inputs = inputs;
            }
        }
        servers_were_down = servers_down;
        if !delta.ready() {
            continue;
        }
        // Consul checks ACLs on every request and snapshot once it has one.
        let dest = destination.clone().unwrap_or_else(|| id.to_owned());
        auth::authorize(&store, ctx.token.as_deref(), &dest)?;
        auth_deadline = Some(Instant::now() + AUTH_CHECK_FREQUENCY);
        for resp in delta.poll() {
            let delay = ctx.faults.borrow().delay_for(DELTA_PATH);
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            log.record(
                ctx.stream,
                XdsEvent::Response {
                    type_url: resp.type_url.clone(),
                    nonce: resp.nonce.clone(),
                    resources: resp
                        .resources
                        .iter()
                        .map(|r| (r.name.clone(), r.version.clone()))
                        .collect(),
                    removed: resp.removed_resources.clone(),
                },
            );
            if tx.send(Ok(resp)).await.is_err() {
                return Ok("connection closed".into());
            }
        }
    }
}

/// The snapshot to install now, if any: while the servers are unreachable the agent keeps the
/// proxy's last snapshot (and sends nothing new); a stream that has none yet gets the agent's.
/// Otherwise the proxy's cached snapshot when it was built from `inputs` and is not due for a
/// refresh, else a fresh build.
fn snapshot(
    ctx: &StreamCtx,
    id: &str,
    servers_down: bool,
    have_one: bool,
    inputs: Option<&Inputs>,
) -> Result<Option<ProxyResources>, Status> {
    if servers_down {
        if have_one {
            return Ok(None);
        }
        if let Some(c) = ctx.cache.lock().get(id) {
            return Ok(Some(c.snap.clone()));
        }
    }
    if let Some(inputs) = inputs
        && let Some(c) = ctx.cache.lock().get(id)
        && c.inputs.as_ref() == Some(inputs)
        && c.snap
            .refresh_at
            .is_none_or(|at| at > time::OffsetDateTime::now_utc())
    {
        return Ok(Some(c.snap.clone()));
    }
    ctx.control.xds_log().count_build();
    match ctx.source.build(id) {
        Ok(Some(snap)) => {
            let cached = Cached {
                inputs: inputs.cloned(),
                snap: snap.clone(),
            };
            ctx.cache.lock().insert(id.to_owned(), cached);
            Ok(Some(snap))
        }
        // Not registered (yet): Consul's proxycfg watch waits for it.
        Ok(None) => Ok(None),
        Err(e) => {
            tracing::warn!(proxy = id, error = %e, "cannot build xDS resources; waiting");
            Ok(None)
        }
    }
}

fn record_request(
    log: &crate::xds::XdsLog,
    stream: u64,
    req: &DeltaDiscoveryRequest,
    r: &Received,
) {
    match r {
        Received::Ack { nonce, .. } => {
            log.record(
                stream,
                XdsEvent::Ack {
                    type_url: req.type_url.clone(),
                    nonce: nonce.clone(),
                },
            );
        }
        Received::Nack {
            nonce,
            code,
            message,
        } => {
            log.record(
                stream,
                XdsEvent::Nack {
                    type_url: req.type_url.clone(),
                    nonce: nonce.clone(),
                    code: *code,
                    message: message.clone(),
                },
            );
        }
        _ => {}
    }
    let is_plain_ack = matches!(r, Received::Ack { .. })
        && req.resource_names_subscribe.is_empty()
        && req.resource_names_unsubscribe.is_empty();
    if !is_plain_ack && !matches!(r, Received::Nack { .. }) {
        log.record(
            stream,
            XdsEvent::Request {
                type_url: req.type_url.clone(),
                subscribe: req.resource_names_subscribe.clone(),
                unsubscribe: req.resource_names_unsubscribe.clone(),
                initial_versions: req
                    .initial_resource_versions
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            },
        );
    }
}
