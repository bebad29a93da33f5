//! Envoy 1.40 started on `xds::bootstrap::render`'s JSON opens a delta ADS stream to the gRPC
//! address it names, with the token as `x-consul-token` metadata and the proxy ID as `node.id`,
//! asking for clusters first (Envoy asks for listeners only once CDS is answered, which this
//! recording server never does): what Consul's agent expects of a `consul connect envoy`
//! bootstrap. The agent side is a minimal recording ADS server (no resources are sent).
//! Ignored with the reason where Envoy was absent when the crate was built (`ENVOY_BIN` or the
//! workspace's `.tools/envoy-1.40.0/envoy/_bin/envoy`; the cfg `missing_envoy` of `build.rs`).

use std::pin::Pin;
use std::time::Duration;

use agent_sim::xds::bootstrap::{BootstrapParams, render};
use agent_sim::xds::types::CLUSTER;
use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_server::{
    AggregatedDiscoveryService, AggregatedDiscoveryServiceServer,
};
use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
};
use tokio::sync::mpsc;
use tokio_stream::Stream;
use tonic::{Request, Response, Status, Streaming};

#[path = "../src/xds/test_envoy.rs"]
#[allow(unreachable_pub, dead_code)]
mod test_envoy;

type Pending<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// What one delta stream carried: its `x-consul-token` and each request.
type Seen = (Option<String>, DeltaDiscoveryRequest);

struct Recorder(mpsc::UnboundedSender<Seen>);

#[tonic::async_trait]
impl AggregatedDiscoveryService for Recorder {
    type StreamAggregatedResourcesStream = Pending<DiscoveryResponse>;
    type DeltaAggregatedResourcesStream = Pending<DeltaDiscoveryResponse>;

    async fn stream_aggregated_resources(
        &self,
        _: Request<Streaming<DiscoveryRequest>>,
    ) -> Result<Response<Self::StreamAggregatedResourcesStream>, Status> {
        Err(Status::unimplemented("not implemented"))
    }

    async fn delta_aggregated_resources(
        &self,
        req: Request<Streaming<DeltaDiscoveryRequest>>,
    ) -> Result<Response<Self::DeltaAggregatedResourcesStream>, Status> {
        let token = req
            .metadata()
            .get("x-consul-token")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mut stream = req.into_inner();
        let tx = self.0.clone();
        tokio::spawn(async move {
            while let Ok(Some(r)) = stream.message().await {
                if tx.send((token.clone(), r)).is_err() {
                    break;
                }
            }
        });
        Ok(Response::new(Box::pin(tokio_stream::pending())))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
async fn envoy_opens_delta_ads_with_token_and_node_id() {
    let envoy = test_envoy::envoy("envoy_opens_delta_ads_with_token_and_node_id");
    let incoming =
        tonic::transport::server::TcpIncoming::bind("127.0.0.1:0".parse().expect("addr"))
            .expect("bind");
    let grpc_addr = incoming.local_addr().expect("local addr");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let server = tokio::spawn(tonic::transport::Server::builder().serve_with_incoming(
        AggregatedDiscoveryServiceServer::new(Recorder(tx)),
        incoming,
    ));

    let params = BootstrapParams {
        proxy_id: "web-sidecar-proxy".into(),
        cluster: "web".into(),
        namespace: "default".into(),
        partition: "default".into(),
        datacenter: "dc1".into(),
        grpc_addr,
        token: Some("tok-123".into()),
        admin_bind: "127.0.0.1:0".parse().expect("addr"),
    };
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("bootstrap.json");
    std::fs::write(
        &path,
        serde_json::to_vec_pretty(&render(&params)).expect("json"),
    )
    .expect("write");
    let mut child = tokio::process::Command::new(&envoy)
        .arg("-c")
        .arg(&path)
        .args([
            "--concurrency",
            "1",
            "--disable-hot-restart",
            "--log-level",
            "warn",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("envoy starts");

    // Envoy's first delta request is for clusters (LDS follows only once CDS is answered).
    let mut types = Vec::new();
    let mut first: Option<Seen> = None;
    let wait = tokio::time::timeout(Duration::from_secs(60), async {
        while !types.contains(&CLUSTER.to_owned()) {
            let Some(seen) = rx.recv().await else { break };
            types.push(seen.1.type_url.clone());
            first.get_or_insert(seen);
        }
    })
    .await;
    let _ = child.start_kill();
    let out = child.wait_with_output().await.expect("envoy output");
    server.abort();
    assert!(
        wait.is_ok(),
        "no CDS delta request within 60 s (saw {types:?}); envoy stderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (token, req) = first.expect("a first request");
    assert_eq!(token.as_deref(), Some("tok-123"));
    let node = req.node.clone().expect("node on the first request");
    assert_eq!(node.id, "web-sidecar-proxy");
    assert_eq!(node.cluster, "web");
    assert_eq!(req.type_url, CLUSTER);
    // Wildcard subscriptions, as Consul's bootstrap (ads {} for lds/cds) makes Envoy ask.
    assert!(req.resource_names_subscribe.is_empty(), "{req:?}");
}
