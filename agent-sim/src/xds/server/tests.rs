//! Loopback tests of the transport with a test [`Source`]: a real HTTP/2 listener, a tonic
//! client from envoy-types, the fault set, the ACL store and the xDS log.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest,
};
use envoy_types::pb::google::protobuf::Any;
use envoy_types::pb::google::rpc::Status as RpcStatus;
use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Streaming};

use super::*;
use crate::assembly::sim::AgentSim;
use crate::model::acl::DefaultPolicy;
use crate::state::control::Control;
use crate::xds::XdsLogEntry;
use crate::xds::resources::{BuildError, ProxyResources};
use crate::xds::types::{CLUSTER, LISTENER, Resource, Resources, SECRET};

const WAIT: Duration = Duration::from_secs(20);
/// How long "no answer" is watched for.
pub(super) const QUIET: Duration = Duration::from_millis(600);
pub(super) const PROXY: &str = "web-sidecar-proxy";

#[derive(Default)]
pub(super) struct TestSource {
    data: Mutex<BTreeMap<String, ProxyResources>>,
    tx: Mutex<Option<watch::Sender<u64>>>,
}

impl TestSource {
    pub(super) fn new() -> Arc<Self> {
        let s = Self::default();
        *s.tx.lock() = Some(watch::channel(0).0);
        Arc::new(s)
    }

    /// Changes the data without signalling (only `refresh_at` can reveal it).
    fn put_quietly(
        &self,
        proxy: &str,
        resources: Resources,
        refresh_at: Option<time::OffsetDateTime>,
    ) {
        self.data.lock().insert(
            proxy.to_owned(),
            ProxyResources {
                resources,
                refresh_at,
            },
        );
    }

    pub(super) fn put(&self, proxy: &str, resources: Resources) {
        self.data.lock().insert(
            proxy.to_owned(),
            ProxyResources {
                resources,
                refresh_at: None,
            },
        );
        if let Some(tx) = &*self.tx.lock() {
            tx.send_modify(|c| *c += 1);
        }
    }
}

impl Source for TestSource {
    fn build(&self, proxy_id: &str) -> Result<Option<ProxyResources>, BuildError> {
        Ok(self.data.lock().get(proxy_id).cloned())
    }

    fn changes(&self) -> watch::Receiver<u64> {
        match &*self.tx.lock() {
            Some(tx) => tx.subscribe(),
            None => watch::channel(0).1,
        }
    }
}

fn res(type_url: &str, name: &str, version: &str) -> Resource {
    Resource {
        name: name.into(),
        version: version.into(),
        any: Any {
            type_url: type_url.into(),
            value: format!("{name}@{version}").into_bytes(),
        },
    }
}

pub(super) fn set(items: &[(&'static str, &str, &str)]) -> Resources {
    let mut r = Resources::default();
    for (t, n, v) in items {
        r.insert(t, res(t, n, v));
    }
    r
}

pub(super) struct Harness {
    pub(super) control: Control,
    pub(super) source: Arc<TestSource>,
    pub(super) addr: SocketAddr,
    _shutdown: watch::Sender<bool>,
}

pub(super) async fn start(acl: bool) -> Harness {
    let mut b = AgentSim::builder();
    if acl {
        b = b.acls("root", DefaultPolicy::Deny);
    }
    let (_router, control) = b.build().expect("sim");
    control
        .register(&json!({
            "Name": PROXY, "ID": PROXY, "Kind": "connect-proxy", "Port": 21000,
            "Proxy": {"DestinationServiceName": "web"}
        }))
        .expect("register");
    let source = TestSource::new();
    let listener = bind(SocketAddr::from(([127, 0, 0, 1], 0))).expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (shutdown, shutdown_rx) = watch::channel(false);
    tokio::spawn(serve(
        listener,
        control.clone(),
        source.clone(),
        control.faults.subscribe(),
        shutdown_rx.clone(),
        plain(),
    ));
    tokio::spawn(crate::state::background::fault_transitions(
        control.clone(),
        shutdown_rx,
    ));
    Harness {
        control,
        source,
        addr,
        _shutdown: shutdown,
    }
}

pub(super) struct Client {
    tx: mpsc::Sender<DeltaDiscoveryRequest>,
    rx: Streaming<DeltaDiscoveryResponse>,
}

pub(super) async fn open(addr: SocketAddr, token: Option<&str>) -> Result<Client, Status> {
    let mut client = AggregatedDiscoveryServiceClient::connect(format!("http://{addr}"))
        .await
        .map_err(|e| Status::unavailable(e.to_string()))?;
    let (tx, rx) = mpsc::channel(16);
    let mut req = Request::new(ReceiverStream::new(rx));
    if let Some(t) = token {
        req.metadata_mut()
            .insert("x-consul-token", t.parse().expect("ascii token"));
    }
    let rx = client.delta_aggregated_resources(req).await?.into_inner();
    Ok(Client { tx, rx })
}

pub(super) fn first(type_url: &str, names: &[&str]) -> DeltaDiscoveryRequest {
    DeltaDiscoveryRequest {
        node: Some(Node {
            id: PROXY.into(),
            cluster: "web".into(),
            ..Default::default()
        }),
        type_url: type_url.into(),
        resource_names_subscribe: names.iter().map(|s| (*s).to_owned()).collect(),
        ..Default::default()
    }
}

pub(super) fn ack_of(r: &DeltaDiscoveryResponse) -> DeltaDiscoveryRequest {
    DeltaDiscoveryRequest {
        type_url: r.type_url.clone(),
        response_nonce: r.nonce.clone(),
        ..Default::default()
    }
}

impl Client {
    pub(super) async fn send(&self, req: DeltaDiscoveryRequest) {
        self.tx.send(req).await.expect("send");
    }

    pub(super) async fn next(&mut self) -> Result<DeltaDiscoveryResponse, Status> {
        match tokio::time::timeout(WAIT, self.rx.message()).await {
            Err(_) => panic!("no response within {WAIT:?}"),
            Ok(Ok(Some(r))) => Ok(r),
            Ok(Ok(None)) => Err(Status::ok("stream ended")),
            Ok(Err(s)) => Err(s),
        }
    }

    /// Nothing arrives for a while.
    pub(super) async fn quiet(&mut self) -> bool {
        tokio::time::timeout(QUIET, self.rx.message())
            .await
            .is_err()
    }
}

pub(super) fn names(r: &DeltaDiscoveryResponse) -> Vec<(String, String)> {
    r.resources
        .iter()
        .map(|x| (x.name.clone(), x.version.clone()))
        .collect()
}

pub(super) fn nv(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

pub(super) async fn wait_log(c: &Control, pred: impl Fn(&XdsLogEntry) -> bool) -> XdsLogEntry {
    c.xds_log().wait_for(WAIT, pred).await.expect("log entry")
}

#[tokio::test]
async fn wildcard_then_ack_then_only_the_diff() {
    let h = start(false).await;
    h.source.put(
        PROXY,
        set(&[
            (CLUSTER, "a", "1"),
            (CLUSTER, "b", "1"),
            (LISTENER, "l", "1"),
        ]),
    );
    let mut c = open(h.addr, None).await.expect("open");
    c.send(first(CLUSTER, &[])).await;
    c.send(DeltaDiscoveryRequest {
        type_url: LISTENER.into(),
        ..Default::default()
    })
    .await;
    let r = c.next().await.expect("cds");
    assert_eq!(r.type_url, CLUSTER);
    assert_eq!(names(&r), nv(&[("a", "1"), ("b", "1")]));
    c.send(ack_of(&r)).await;
    let r = c.next().await.expect("lds");
    assert_eq!(r.type_url, LISTENER);
    c.send(ack_of(&r)).await;
    h.source.put(
        PROXY,
        set(&[
            (CLUSTER, "a", "1"),
            (CLUSTER, "b", "2"),
            (LISTENER, "l", "1"),
        ]),
    );
    let r = c.next().await.expect("diff");
    assert_eq!(names(&r), nv(&[("b", "2")]));
    let opened = wait_log(&h.control, |e| matches!(e.event, XdsEvent::Opened { .. })).await;
    assert!(
        matches!(&opened.event, XdsEvent::Opened { node_id, token: None, peer: Some(_) } if node_id == PROXY)
    );
    wait_log(
        &h.control,
        |e| matches!(&e.event, XdsEvent::Ack { nonce, .. } if nonce == "00000002"),
    )
    .await;
}

#[tokio::test]
async fn type_url_is_required() {
    let h = start(false).await;
    let mut c = open(h.addr, None).await.expect("open");
    c.send(DeltaDiscoveryRequest::default()).await;
    let err = c.next().await.expect_err("must fail");
    assert_eq!(err.code(), Code::InvalidArgument);
    assert_eq!(err.message(), "type URL is required for ADS");
    wait_log(&h.control, |e| {
        matches!(&e.event, XdsEvent::Closed { code: 3, .. })
    })
    .await;
}

#[tokio::test]
async fn sotw_is_not_implemented_as_in_consul() {
    let h = start(false).await;
    let mut client = AggregatedDiscoveryServiceClient::connect(format!("http://{}", h.addr))
        .await
        .expect("connect");
    let (_tx, rx) = mpsc::channel::<DiscoveryRequest>(1);
    let err = client
        .stream_aggregated_resources(ReceiverStream::new(rx))
        .await
        .expect_err("SotW");
    assert_eq!(err.code(), Code::Unknown);
    assert_eq!(err.message(), "not implemented");
}

#[tokio::test]
async fn token_checks_as_consul() {
    let h = start(true).await;
    h.source.put(PROXY, set(&[(CLUSTER, "a", "1")]));
    // Unknown token: refused up front.
    let err = match open(h.addr, Some("nope")).await {
        Err(e) => e,
        Ok(mut c) => {
            c.send(first(CLUSTER, &[])).await;
            c.next().await.expect_err("unknown token")
        }
    };
    assert_eq!(err.code(), Code::Unauthenticated);
    assert_eq!(err.message(), "unauthenticated: ACL not found");
    // Missing token: the anonymous token lacks service:write.
    let mut c = open(h.addr, None).await.expect("open");
    c.send(first(CLUSTER, &[])).await;
    let err = c.next().await.expect_err("anonymous");
    assert_eq!(err.code(), Code::PermissionDenied);
    assert!(
        err.message().starts_with(
            "Permission denied: anonymous token lacks permission 'service:write' on \"web\""
        ),
        "{}",
        err.message()
    );
    // A token without service:write on the destination.
    let weak = h
        .control
        .create_token(r#"service "web" { policy = "read" }"#, "weak")
        .expect("token");
    let mut c = open(h.addr, Some(&weak.secret_id)).await.expect("open");
    c.send(first(CLUSTER, &[])).await;
    let err = c.next().await.expect_err("weak");
    assert_eq!(err.code(), Code::PermissionDenied);
    assert_eq!(
        err.message(),
        format!(
            "Permission denied: token with AccessorID '{}' lacks permission 'service:write' on \"web\"",
            weak.accessor_id
        )
    );
    // A good one.
    let good = h
        .control
        .create_token(r#"service "web" { policy = "write" }"#, "good")
        .expect("token");
    let mut c = open(h.addr, Some(&good.secret_id)).await.expect("open");
    c.send(first(CLUSTER, &[])).await;
    let r = c.next().await.expect("good token");
    assert_eq!(names(&r), nv(&[("a", "1")]));
    wait_log(
        &h.control,
        |e| matches!(&e.event, XdsEvent::Opened { token: Some(t), .. } if *t == good.secret_id),
    )
    .await;
}

#[tokio::test]
async fn nack_is_recorded_and_not_resent() {
    let h = start(false).await;
    h.source.put(
        PROXY,
        set(&[(CLUSTER, "a", "1"), (SECRET, "connect-leaf", "1")]),
    );
    let mut c = open(h.addr, None).await.expect("open");
    c.send(first(CLUSTER, &[])).await;
    let r = c.next().await.expect("cds");
    c.send(DeltaDiscoveryRequest {
        error_detail: Some(RpcStatus {
            code: 3,
            message: "bad cluster a".into(),
            details: vec![],
        }),
        ..ack_of(&r)
    })
    .await;
    let nack = wait_log(&h.control, |e| matches!(e.event, XdsEvent::Nack { .. })).await;
    assert!(
        matches!(&nack.event, XdsEvent::Nack { message, code: 3, .. } if message == "bad cluster a")
    );
    // A later request is processed (the secret goes out) but the cluster is not re-sent.
    c.send(DeltaDiscoveryRequest {
        type_url: SECRET.into(),
        resource_names_subscribe: vec!["connect-leaf".into()],
        ..Default::default()
    })
    .await;
    let r = c.next().await.expect("sds");
    assert_eq!(r.type_url, SECRET);
    assert!(c.quiet().await, "the NACKed cluster came back");
    // A new set: it goes out.
    h.source.put(
        PROXY,
        set(&[(CLUSTER, "a", "2"), (SECRET, "connect-leaf", "1")]),
    );
    let r = c.next().await.expect("cds again");
    assert_eq!(names(&r), nv(&[("a", "2")]));
}

#[tokio::test]
async fn one_response_per_type_in_flight() {
    let h = start(false).await;
    h.source
        .put(PROXY, set(&[(CLUSTER, "a", "1"), (SECRET, "s", "1")]));
    let mut c = open(h.addr, None).await.expect("open");
    c.send(first(CLUSTER, &[])).await;
    let r1 = c.next().await.expect("cds");
    h.source
        .put(PROXY, set(&[(CLUSTER, "a", "2"), (SECRET, "s", "1")]));
    // Prove the change was processed: another type still answers.
    c.send(DeltaDiscoveryRequest {
        type_url: SECRET.into(),
        resource_names_subscribe: vec!["s".into()],
        ..Default::default()
    })
    .await;
    let r = c.next().await.expect("sds");
    assert_eq!(r.type_url, SECRET, "a second CDS response before the ACK");
    c.send(ack_of(&r1)).await;
    let r = c.next().await.expect("cds after ack");
    assert_eq!(names(&r), nv(&[("a", "2")]));
    assert!(h.control.xds_log().unanswered().len() == 2);
}

#[tokio::test]
async fn reconnect_with_initial_versions_gets_only_what_differs() {
    let h = start(false).await;
    h.source
        .put(PROXY, set(&[(CLUSTER, "a", "1"), (CLUSTER, "b", "2")]));
    let mut c = open(h.addr, None).await.expect("open");
    let mut req = first(CLUSTER, &[]);
    req.initial_resource_versions =
        HashMap::from([("a".into(), "1".into()), ("b".into(), "1".into())]);
    c.send(req).await;
    let r = c.next().await.expect("cds");
    assert_eq!(names(&r), nv(&[("b", "2")]));
}

#[tokio::test]
async fn unknown_proxy_waits_for_registration() {
    let h = start(false).await;
    let mut c = open(h.addr, None).await.expect("open");
    c.send(first(CLUSTER, &[])).await;
    wait_log(&h.control, |e| matches!(e.event, XdsEvent::Opened { .. })).await;
    assert!(c.quiet().await);
    h.source.put(PROXY, set(&[(CLUSTER, "a", "1")]));
    let r = c.next().await.expect("after registration");
    assert_eq!(names(&r), nv(&[("a", "1")]));
}

#[tokio::test]
async fn refresh_at_rebuilds_without_a_store_change() {
    let h = start(false).await;
    let soon = time::OffsetDateTime::now_utc() + time::Duration::milliseconds(300);
    h.source
        .put_quietly(PROXY, set(&[(CLUSTER, "a", "1")]), Some(soon));
    let mut c = open(h.addr, None).await.expect("open");
    c.send(first(CLUSTER, &[])).await;
    let r = c.next().await.expect("cds");
    c.send(ack_of(&r)).await;
    // The leaf renews at `refresh_at`: nothing signals, yet the new set must go out.
    h.source
        .put_quietly(PROXY, set(&[(CLUSTER, "a", "2")]), None);
    let r = c.next().await.expect("rebuilt at refresh_at");
    assert_eq!(names(&r), nv(&[("a", "2")]));
}
