//! The xDS transport: Consul's `AggregatedDiscoveryService` (delta ADS; state-of-the-world
//! answers "not implemented" as Consul's `server.go` does) served over HTTP/2 on the agent's
//! gRPC port by the same accept loop as the HTTP API, so agent-down refuses and cuts gRPC too.
//! Agent hung: new connections are accepted but get no answer (not even HTTP/2 settings) until
//! it ends, and open streams process and send nothing. Each stream is run by [`stream`].

mod auth;
mod source;
mod stream;

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_server::{
    AggregatedDiscoveryService, AggregatedDiscoveryServiceServer,
};
use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use crate::state::agent_tls::{TlsRx, plain};
use crate::state::control::Control;
use crate::state::faults::FaultSet;
use crate::state::listener::BoxIo;
use crate::state::xds_log::XdsEvent;
pub(crate) use source::{Source, StoreSource};
use stream::{SnapshotCache, StreamCtx};

/// Binds the gRPC port.
pub(crate) fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    crate::state::listener::bind(addr)
}

/// Serves delta ADS from the store until `shutdown` turns true.
pub(crate) async fn run(
    listener: TcpListener,
    control: Control,
    faults: watch::Receiver<Arc<FaultSet>>,
    shutdown: watch::Receiver<bool>,
) {
    let source = Arc::new(StoreSource {
        store: control.store.clone(),
        cfg: control.store.cfg.xds.clone(),
    });
    let tls = control.agent_tls().map_or_else(plain, |t| t.grpc_rx());
    serve(listener, control, source, faults, shutdown, tls).await;
}

/// Serves delta ADS with resources from `source`.
pub(crate) async fn serve(
    listener: TcpListener,
    control: Control,
    source: Arc<dyn Source>,
    faults: watch::Receiver<Arc<FaultSet>>,
    shutdown: watch::Receiver<bool>,
    tls: TlsRx,
) {
    let cache: Arc<SnapshotCache> = Arc::default();
    // The agent's proxy state dies with it: forget every snapshot when it goes down.
    let forget = tokio::spawn(forget_on_down(faults.clone(), cache.clone()));
    let ads = Arc::new(Ads {
        control,
        source,
        cache,
        faults: faults.clone(),
    });
    let conn_faults = faults.clone();
    crate::state::listener::accept_loop(listener, faults, shutdown, tls, move |stream, peer| {
        serve_conn(stream, peer, ads.clone(), conn_faults.clone())
    })
    .await;
    forget.abort();
}

async fn forget_on_down(mut faults: watch::Receiver<Arc<FaultSet>>, cache: Arc<SnapshotCache>) {
    loop {
        if faults.borrow_and_update().down {
            cache.lock().clear();
        }
        if faults.changed().await.is_err() {
            return;
        }
    }
}

/// The peer address, put in each request's extensions.
#[derive(Debug, Clone, Copy)]
struct Peer(SocketAddr);

async fn serve_conn(
    stream: BoxIo,
    peer: SocketAddr,
    ads: Arc<Ads>,
    mut faults: watch::Receiver<Arc<FaultSet>>,
) {
    // Hung: the connection is accepted and left unanswered until the fault ends.
    while faults.borrow_and_update().hung {
        if faults.changed().await.is_err() {
            break;
        }
    }
    let peer = Some(peer);
    let svc = AggregatedDiscoveryServiceServer::from_arc(ads);
    let svc = tower::ServiceExt::map_request(svc, move |mut req: http::Request<_>| {
        if let Some(p) = peer {
            req.extensions_mut().insert(Peer(p));
        }
        req
    });
    let conn = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(stream), TowerToHyperService::new(svc));
    if let Err(e) = conn.await {
        tracing::debug!(error = %e, "gRPC connection ended with an error");
    }
}

/// The ADS service.
struct Ads {
    control: Control,
    source: Arc<dyn Source>,
    cache: Arc<SnapshotCache>,
    faults: watch::Receiver<Arc<FaultSet>>,
}

type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

#[tonic::codegen::async_trait]
impl AggregatedDiscoveryService for Ads {
    type StreamAggregatedResourcesStream = BoxStream<DiscoveryResponse>;
    type DeltaAggregatedResourcesStream = BoxStream<DeltaDiscoveryResponse>;

    /// Consul: `return errors.New("not implemented")`, which grpc-go sends as `Unknown`.
    async fn stream_aggregated_resources(
        &self,
        _request: Request<Streaming<DiscoveryRequest>>,
    ) -> Result<Response<Self::StreamAggregatedResourcesStream>, Status> {
        Err(Status::unknown("not implemented"))
    }

    async fn delta_aggregated_resources(
        &self,
        request: Request<Streaming<DeltaDiscoveryRequest>>,
    ) -> Result<Response<Self::DeltaAggregatedResourcesStream>, Status> {
        let token = request
            .metadata()
            .get(auth::TOKEN_KEY)
            .and_then(|v| v.to_str().ok())
            .filter(|t| !t.is_empty())
            .map(str::to_owned);
        let peer = request.extensions().get::<Peer>().map(|p| p.0.to_string());
        let log = self.control.xds_log.clone();
        let stream_no = log.new_stream();
        // Consul's processDelta: "Handle invalid ACL tokens up-front."
        if let Err(status) = auth::authenticate(&self.control.store, token.as_deref()) {
            log.record(
                stream_no,
                XdsEvent::Closed {
                    code: status.code() as i32,
                    reason: status.message().to_owned(),
                },
            );
            return Err(status);
        }
        let (tx, rx) = mpsc::channel(16);
        let ctx = StreamCtx {
            control: self.control.clone(),
            source: self.source.clone(),
            cache: self.cache.clone(),
            faults: self.faults.clone(),
            stream: stream_no,
            token,
            peer,
        };
        tokio::spawn(stream::run(ctx, request.into_inner(), tx));
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}

#[cfg(test)]
mod envoy_tests;
#[cfg(test)]
mod fault_tests;
#[cfg(test)]
mod inputs_tests;
#[cfg(test)]
mod tests;
