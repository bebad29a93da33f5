//! The delta-xDS stream over loopback: malformed and out-of-order `DeltaDiscoveryRequest`s
//! (unknown type URLs, ACKs and NACKs of nonces never sent, garbage names, subscribe and
//! unsubscribe churn, no node, huge requests, requests while the servers are unreachable or the
//! agent hung). Each fuzzed stream must end with a gRPC status or cleanly once the client is
//! done (no hang), and a well-behaved stream opened before keeps being served, as does a new one.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_sim::xds::types::{CLUSTER, ENDPOINT, LISTENER, ROUTE, SECRET};
use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse,
};
use envoy_types::pb::google::rpc::Status as RpcStatus;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Streaming};

use super::support::{ORDINARY, ROOT, builder, config, runtime, seed};

/// Real time a stream may take to answer or end.
const BOUND: Duration = Duration::from_secs(20);

/// One fuzzed stream's step.
#[derive(Debug, Clone)]
enum Step {
    Send(Box<DeltaDiscoveryRequest>),
    ServersUnreachable(bool),
    /// The agent hangs (streams process nothing) until the client is done with this stream.
    AgentHung(bool),
}

fn type_url() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => select(vec![CLUSTER, ENDPOINT, LISTENER, ROUTE, SECRET]).prop_map(str::to_owned),
        1 => select(vec!["", "type.googleapis.com/envoy.config.route.v3.ScopedRouteConfiguration",
            "type.googleapis.com/envoy.config.cluster.v3.Cluster ", "x"]).prop_map(str::to_owned),
        1 => any::<String>(),
    ]
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => select(vec!["*", "db", "local_app", "public_listener:0.0.0.0:21000",
            "db.default.dc1.internal.11111111-2222-3333-4444-555555555555.consul",
            "connect-leaf", "connect-root", "", "web"]).prop_map(str::to_owned),
        1 => any::<String>(),
    ]
}

fn request() -> impl Strategy<Value = DeltaDiscoveryRequest> {
    let node = prop::option::weighted(
        0.7,
        prop_oneof![
            4 => select(vec!["web-sidecar-proxy", "db-sidecar-proxy", "web", "nobody", ""]).prop_map(str::to_owned),
            1 => any::<String>(),
        ],
    );
    let names = || prop::collection::vec(name(), 0..4);
    let nonce = prop_oneof![
        2 => Just(String::new()),
        2 => (0u32..8).prop_map(|n| format!("{n:08x}")),
        1 => any::<String>(),
    ];
    let detail = prop::option::weighted(
        0.2,
        (any::<i32>(), any::<String>()).prop_map(|(code, message)| RpcStatus {
            code,
            message,
            details: vec![],
        }),
    );
    let versions = prop::collection::hash_map(name(), any::<String>(), 0..3);
    (node, type_url(), names(), names(), versions, nonce, detail).prop_map(
        |(node, type_url, sub, unsub, initial, nonce, detail)| DeltaDiscoveryRequest {
            node: node.map(|id| Node {
                id,
                ..Default::default()
            }),
            type_url,
            resource_names_subscribe: sub,
            resource_names_unsubscribe: unsub,
            initial_resource_versions: initial,
            response_nonce: nonce,
            error_detail: detail,
            ..Default::default()
        },
    )
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        12 => request().prop_map(|r| Step::Send(Box::new(r))),
        1 => (1usize..5_000_000).prop_map(|n| Step::Send(Box::new(DeltaDiscoveryRequest {
            node: Some(Node { id: "web-sidecar-proxy".into(), ..Default::default() }),
            type_url: CLUSTER.into(),
            resource_names_subscribe: vec!["n".repeat(n)],
            ..Default::default()
        }))),
        1 => any::<bool>().prop_map(Step::ServersUnreachable),
        1 => any::<bool>().prop_map(Step::AgentHung),
    ]
}

/// A stream: the request sender and the response stream.
struct Stream {
    tx: mpsc::Sender<DeltaDiscoveryRequest>,
    rx: Streaming<DeltaDiscoveryResponse>,
}

async fn open(addr: SocketAddr, token: Option<&str>) -> Result<Stream, tonic::Status> {
    let mut client = AggregatedDiscoveryServiceClient::connect(format!("http://{addr}"))
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?
        .max_decoding_message_size(64 << 20);
    let (tx, rx) = mpsc::channel(64);
    let mut req = tonic::Request::new(ReceiverStream::new(rx));
    if let Some(t) = token
        && let Ok(v) = t.parse()
    {
        req.metadata_mut().insert("x-consul-token", v);
    }
    let rx = client.delta_aggregated_resources(req).await?.into_inner();
    Ok(Stream { tx, rx })
}

/// A well-behaved Envoy: subscribes to clusters and listeners as `node`, ACKs every response, counts them.
async fn bystander(addr: SocketAddr, token: Option<&str>, node: &str) -> Arc<AtomicUsize> {
    let mut s = open(addr, token).await.expect("bystander opens");
    let count = Arc::new(AtomicUsize::new(0));
    let first = DeltaDiscoveryRequest {
        node: Some(Node {
            id: node.into(),
            ..Default::default()
        }),
        type_url: CLUSTER.into(),
        ..Default::default()
    };
    let listeners = DeltaDiscoveryRequest {
        type_url: LISTENER.into(),
        ..Default::default()
    };
    s.tx.send(first).await.expect("bystander sends");
    s.tx.send(listeners).await.expect("bystander sends");
    let seen = count.clone();
    tokio::spawn(async move {
        while let Ok(Some(resp)) = s.rx.message().await {
            seen.fetch_add(1, Ordering::SeqCst);
            let ack = DeltaDiscoveryRequest {
                type_url: resp.type_url.clone(),
                response_nonce: resp.nonce.clone(),
                ..Default::default()
            };
            if s.tx.send(ack).await.is_err() {
                break;
            }
        }
        seen.store(usize::MAX, Ordering::SeqCst); // ended: fails the later check
    });
    count
}

/// Waits until `count` passes `above` (and did not end).
async fn served_after(count: &AtomicUsize, above: usize) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        let n = count.load(Ordering::SeqCst);
        if n == usize::MAX {
            return Err("the bystander stream ended".into());
        }
        if n > above {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!("the bystander got nothing new within {BOUND:?}"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// gRPC codes a fuzzed stream may end with (Consul's `delta.go` answers): bad requests,
/// tokens, a missing node, and a message over the 4 MiB decoding limit.
const ALLOWED: &[Code] = &[
    Code::Ok,
    Code::InvalidArgument,
    Code::Unauthenticated,
    Code::PermissionDenied,
    Code::Unknown,
    Code::OutOfRange,
    Code::ResourceExhausted,
    Code::Cancelled,
];

proptest! {
    #![proptest_config(config(40, "proptest-regressions/fuzz/xds.txt"))]

    #[test]
    fn malformed_delta_streams_end_cleanly_and_harm_no_one(
        acl in any::<bool>(),
        token in select(vec![None, Some(ROOT), Some(ORDINARY), Some("not-a-token"), Some("")]),
        streams in prop::collection::vec(prop::collection::vec(step(), 1..10), 1..3),
    ) {
        let result: Result<(), TestCaseError> = runtime().block_on(async {
            let sim = builder(acl)
                .grpc_bind(SocketAddr::from(([127, 0, 0, 1], 0)))
                .start()
                .await
                .expect("sim starts");
            seed(sim.control(), acl);
            let addr = sim.grpc_addr().expect("grpc");
            let good = if acl { Some(ROOT) } else { None };
            let watcher = bystander(addr, good, "web-sidecar-proxy").await;
            served_after(&watcher, 0).await.map_err(TestCaseError::fail)?;
            let mut _unreachable = None;
            let mut hung = None;
            for steps in &streams {
                let Stream { tx, mut rx } = match open(addr, token).await {
                    Ok(s) => s,
                    Err(status) => {
                        prop_assert!(ALLOWED.contains(&status.code()), "open: {status:?}");
                        continue;
                    }
                };
                let drain = tokio::spawn(async move {
                    loop {
                        match tokio::time::timeout(BOUND, rx.message()).await {
                            Ok(Ok(Some(_))) => {}
                            Ok(Ok(None)) => return Ok(Code::Ok),
                            Ok(Err(status)) => return Ok(status.code()),
                            Err(_) => return Err("stream neither answered nor ended".to_owned()),
                        }
                    }
                });
                for step in steps {
                    match step {
                        Step::Send(r) => {
                            if tx.send((**r).clone()).await.is_err() {
                                break; // the server ended the stream
                            }
                        }
                        Step::ServersUnreachable(on) => {
                            _unreachable = on.then(|| sim.control().servers_unreachable());
                        }
                        Step::AgentHung(on) => {
                            hung = on.then(|| sim.control().agent_hung());
                        }
                    }
                }
                drop(tx); // the client is done: the stream must end (once the agent answers again)
                drop(hung.take());
                let code = drain.await.expect("drain").map_err(TestCaseError::fail)?;
                prop_assert!(ALLOWED.contains(&code), "stream ended with {:?}", code);
            }
            _unreachable = None;
            // The stream opened before is still served, and so is a new one.
            let before = watcher.load(Ordering::SeqCst);
            sim.control().rotate_ca(true).map_err(|e| TestCaseError::fail(e.to_string()))?;
            served_after(&watcher, before).await.map_err(TestCaseError::fail)?;
            let fresh = bystander(addr, good, "db-sidecar-proxy").await;
            served_after(&fresh, 0).await.map_err(TestCaseError::fail)?;
            sim.shutdown().await;
            Ok(())
        });
        result?;
    }
}
