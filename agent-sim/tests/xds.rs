//! agent-sim's gRPC xDS port from the outside: a real listener started by the builder, a tonic
//! client from envoy-types, the control API's `/_sim/xds-log`, and the agent's faults. (Protocol
//! details with controlled resources are covered by the unit tests beside `xds/server.rs`.)

use std::net::SocketAddr;
use std::time::Duration;

use agent_sim::acl::DefaultPolicy;
use agent_sim::xds::XdsEvent;
use agent_sim::{AgentSim, Listening};
use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest,
};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Status, Streaming};

const WAIT: Duration = Duration::from_secs(20);
const QUIET: Duration = Duration::from_millis(600);
const CLUSTER: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

async fn sim(acl: bool) -> Listening {
    let mut b = AgentSim::builder()
        .grpc_bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .run_checks(false);
    if acl {
        b = b.acls("root", DefaultPolicy::Deny);
    }
    b.start().await.expect("start")
}

struct Stream {
    tx: mpsc::Sender<DeltaDiscoveryRequest>,
    rx: Streaming<DeltaDiscoveryResponse>,
}

async fn open(addr: SocketAddr, token: Option<&str>) -> Result<Stream, Status> {
    let mut client = AggregatedDiscoveryServiceClient::connect(format!("http://{addr}"))
        .await
        .map_err(|e| Status::unavailable(e.to_string()))?;
    let (tx, rx) = mpsc::channel(8);
    let mut req = tonic::Request::new(ReceiverStream::new(rx));
    if let Some(t) = token {
        req.metadata_mut()
            .insert("x-consul-token", t.parse().expect("ascii"));
    }
    let rx = client.delta_aggregated_resources(req).await?.into_inner();
    Ok(Stream { tx, rx })
}

fn first(node: &str) -> DeltaDiscoveryRequest {
    DeltaDiscoveryRequest {
        node: Some(Node {
            id: node.into(),
            ..Default::default()
        }),
        type_url: CLUSTER.into(),
        ..Default::default()
    }
}

impl Stream {
    async fn end(&mut self) -> Result<Option<DeltaDiscoveryResponse>, Status> {
        tokio::time::timeout(WAIT, self.rx.message())
            .await
            .expect("stream ended in time")
    }
}

fn grpc(sim: &Listening) -> SocketAddr {
    sim.grpc_addr().expect("grpc port")
}

#[tokio::test]
async fn type_url_is_required_and_sotw_is_not_implemented() {
    let sim = sim(false).await;
    let mut s = open(grpc(&sim), None).await.expect("open");
    s.tx.send(DeltaDiscoveryRequest::default())
        .await
        .expect("send");
    let err = s.end().await.expect_err("no type URL");
    assert_eq!(err.code(), Code::InvalidArgument);
    assert_eq!(err.message(), "type URL is required for ADS");

    let mut client = AggregatedDiscoveryServiceClient::connect(format!("http://{}", grpc(&sim)))
        .await
        .expect("connect");
    let (_tx, rx) = mpsc::channel::<DiscoveryRequest>(1);
    let err = client
        .stream_aggregated_resources(ReceiverStream::new(rx))
        .await
        .expect_err("SotW");
    assert_eq!(
        (err.code(), err.message()),
        (Code::Unknown, "not implemented")
    );
}

#[tokio::test]
async fn unknown_token_is_unauthenticated() {
    let sim = sim(true).await;
    let err = match open(grpc(&sim), Some("not-a-token")).await {
        Err(e) => e,
        Ok(mut s) => {
            s.tx.send(first("web-sidecar-proxy")).await.expect("send");
            s.end().await.expect_err("refused")
        }
    };
    assert_eq!(err.code(), Code::Unauthenticated);
    assert_eq!(err.message(), "unauthenticated: ACL not found");
    let closed = sim
        .control()
        .xds_log()
        .wait_for(WAIT, |e| {
            matches!(e.event, XdsEvent::Closed { code: 16, .. })
        })
        .await;
    assert!(closed.is_some());
}

#[tokio::test]
async fn unknown_proxy_waits_and_the_log_is_served() {
    let sim = sim(true).await;
    let mut s = open(grpc(&sim), Some("root")).await.expect("open");
    s.tx.send(first("nobody-sidecar-proxy"))
        .await
        .expect("send");
    sim.control()
        .xds_log()
        .wait_for(WAIT, |e| matches!(e.event, XdsEvent::Opened { .. }))
        .await
        .expect("opened");
    assert!(
        tokio::time::timeout(QUIET, s.rx.message()).await.is_err(),
        "an unregistered proxy was answered"
    );
    // reqwest may be built with `rustls-no-provider` (the reference proxy's feature, unified in a
    // workspace build): it then needs a process-wide provider, even for plain HTTP.
    let _ = rustls::crypto::ring::default_provider().install_default();
    // ACLs are on: the control API wants the management token.
    let body: serde_json::Value = reqwest::Client::new()
        .get(format!("{}/_sim/xds-log", sim.url()))
        .header("X-Consul-Token", "root")
        .send()
        .await
        .expect("GET")
        .json()
        .await
        .expect("json");
    let entries = body["Entries"].as_array().expect("entries");
    let opened = entries
        .iter()
        .find(|e| e["event"]["kind"] == "opened")
        .expect("opened entry");
    assert_eq!(opened["event"]["node_id"], "nobody-sidecar-proxy");
    assert_eq!(opened["event"]["token"], "root");
    assert!(
        entries
            .iter()
            .any(|e| e["event"]["kind"] == "request" && e["event"]["type_url"] == CLUSTER)
    );
    assert_eq!(body["Dropped"], 0);
}

#[tokio::test]
async fn agent_down_resets_streams_and_refuses_then_restart_serves_again() {
    let sim = sim(false).await;
    let mut s = open(grpc(&sim), None).await.expect("open");
    s.tx.send(first("web-sidecar-proxy")).await.expect("send");
    sim.control()
        .xds_log()
        .wait_for(WAIT, |e| matches!(e.event, XdsEvent::Opened { .. }))
        .await
        .expect("opened");
    let down = sim.control().agent_down();
    assert!(s.end().await.is_err(), "the stream survived agent-down");
    let closed = sim
        .control()
        .xds_log()
        .wait_for(WAIT, |e| matches!(e.event, XdsEvent::Closed { .. }))
        .await
        .expect("closed");
    assert!(
        matches!(&closed.event, XdsEvent::Closed { reason, .. } if reason == "agent down: connection cut"),
        "{closed:?}"
    );
    assert!(
        tokio::net::TcpStream::connect(grpc(&sim)).await.is_err(),
        "connected while down"
    );
    drop(down);
    let mut again = None;
    for _ in 0..200 {
        if let Ok(s) = open(grpc(&sim), None).await {
            again = Some(s);
            break;
        }
        tokio::task::yield_now().await;
    }
    let mut s = again.expect("serving again");
    s.tx.send(first("web-sidecar-proxy")).await.expect("send");
    // Restart: down then up; the open stream is reset.
    let control = sim.control().clone();
    let restart = tokio::spawn(async move { control.restart(Duration::from_millis(200)).await });
    assert!(s.end().await.is_err(), "the stream survived a restart");
    restart.await.expect("restart");
}

#[tokio::test]
async fn hung_agent_does_not_answer_new_streams() {
    let sim = sim(false).await;
    let _hung = sim.control().agent_hung();
    let attempt = tokio::time::timeout(QUIET, open(grpc(&sim), None)).await;
    assert!(attempt.is_err(), "a stream was answered while hung");
}
