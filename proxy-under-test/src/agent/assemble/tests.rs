//! Assembly tests: discovery-chain following (redirect, failover), upstream validation,
//! fail-closed completeness, Go durations.

use serde_json::json;

use super::*;
use crate::agent::types::ChainResponse;

mod implicit;

fn chain(v: &serde_json::Value) -> CompiledChain {
    serde_json::from_value::<ChainResponse>(v.clone())
        .unwrap()
        .chain
}

#[test]
fn default_chain_resolves_to_its_own_target() {
    // The reference's default-chain example (§6).
    let c = chain(
        &json!({"Chain":{"ServiceName":"db","Namespace":"default","Partition":"default","Datacenter":"dc1",
        "Default":true,"Protocol":"tcp","StartNode":"resolver:db.default.default.dc1",
        "Nodes":{"resolver:db.default.default.dc1":{"Type":"resolver","Name":"db.default.default.dc1",
          "Resolver":{"ConnectTimeout":"5s","Default":true,"Target":"db.default.default.dc1"}}},
        "Targets":{"db.default.default.dc1":{"ConnectTimeout":"5s","ID":"db.default.default.dc1","Service":"db",
          "Namespace":"default","Partition":"default","Datacenter":"dc1","MeshGateway":{},"Subset":{},
          "TransparentProxy":{},"SNI":"db.default.dc1.internal.x.consul","Name":"db.default.dc1.internal.x.consul"}},
        "AutoVirtualIPs":null,"ManualVirtualIPs":null}}),
    );
    let (targets, timeout) = chain_targets(&c).unwrap();
    assert_eq!(targets.len(), 1);
    assert_eq!(
        (targets[0].service.as_str(), targets[0].datacenter.as_str()),
        ("db", "dc1")
    );
    assert_eq!(timeout, Some(Duration::from_secs(5)));
}

#[test]
fn redirect_and_failover_targets_in_order() {
    let c = chain(
        &json!({"Chain":{"ServiceName":"cache","StartNode":"resolver:cache-v2.default.default.dc1",
        "Nodes":{"resolver:cache-v2.default.default.dc1":{"Type":"resolver","Resolver":{"ConnectTimeout":"1.5s",
          "Target":"cache-v2.default.default.dc1","Failover":{"Targets":["cache.default.default.dc2","v1.cache.default.default.dc1"]}}}},
        "Targets":{
          "cache-v2.default.default.dc1":{"ID":"cache-v2.default.default.dc1","Service":"cache-v2","Namespace":"default","Datacenter":"dc1","Subset":{}},
          "cache.default.default.dc2":{"ID":"cache.default.default.dc2","Service":"cache","Namespace":"default","Datacenter":"dc2","Subset":{}},
          "v1.cache.default.default.dc1":{"ID":"v1.cache.default.default.dc1","Service":"cache","Namespace":"default","Datacenter":"dc1",
            "Subset":{"Filter":"Service.Meta.version == v1"}}}}}),
    );
    let (targets, timeout) = chain_targets(&c).unwrap();
    let got: Vec<(&str, &str, &str)> = targets
        .iter()
        .map(|t| (t.service.as_str(), t.datacenter.as_str(), t.filter.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("cache-v2", "dc1", ""),
            ("cache", "dc2", ""),
            ("cache", "dc1", "Service.Meta.version == v1")
        ]
    );
    assert_eq!(timeout, Some(Duration::from_millis(1500)));
    assert_eq!(
        targets[1].health_key("dc1"),
        ("cache".into(), "dc2".into(), String::new())
    );
    assert_eq!(
        targets[0].health_key("dc1"),
        ("cache-v2".into(), String::new(), String::new())
    );
}

#[test]
fn routers_and_splitters_are_followed_to_a_resolver() {
    let c = chain(&json!({"Chain":{"StartNode":"router:web",
        "Nodes":{"router:web":{"Type":"router","Routes":[{"NextNode":"resolver:a"},{"NextNode":"splitter:web"}]},
          "splitter:web":{"Type":"splitter","Splits":[{"Weight":10,"NextNode":"resolver:a"},{"Weight":90,"NextNode":"resolver:b"}]},
          "resolver:a":{"Type":"resolver","Resolver":{"Target":"a"}},
          "resolver:b":{"Type":"resolver","Resolver":{"Target":"b"}}},
        "Targets":{"a":{"ID":"a","Service":"a","Datacenter":"dc1"},"b":{"ID":"b","Service":"b","Datacenter":"dc1"}}}}));
    let (targets, timeout) = chain_targets(&c).unwrap();
    assert_eq!(targets[0].service, "b", "catch-all route, heaviest split");
    assert_eq!(targets[0].namespace, "default");
    assert_eq!(timeout, None);
    // A loop or a dangling node gives no targets (the default target is used instead).
    let broken = chain(
        &json!({"Chain":{"StartNode":"router:x","Nodes":{"router:x":{"Type":"router","Routes":[{"NextNode":"router:x"}]}}}}),
    );
    assert!(chain_targets(&broken).is_none());
    let spec = UpstreamSpec {
        name: "x".into(),
        namespace: "default".into(),
        datacenter: String::new(),
        bind: "127.0.0.1:1".parse().unwrap(),
        protocol: None,
        config: serde_json::Map::new(),
        query: false,
    };
    let (targets, timeout) = targets_for(&spec, Some(&broken), "dc1");
    assert_eq!(
        (targets[0].id.as_str(), timeout),
        ("x.default.default.dc1", DEFAULT_CONNECT_TIMEOUT)
    );
}

#[test]
fn upstreams_are_validated() {
    let svc: AgentService = serde_json::from_value(json!({"Kind":"connect-proxy","ID":"p","Proxy":{
        "DestinationServiceName":"db","Upstreams":[
            {"DestinationName":"cache","LocalBindPort":9191},
            {"DestinationType":"prepared_query","DestinationName":"q","LocalBindPort":9192},
            {"DestinationName":"sock","LocalBindSocketPath":"/tmp/s","LocalBindSocketMode":"0660"},
            {"DestinationName":"noport"},
            {"DestinationName":"other","Datacenter":"dc2","LocalBindAddress":"127.0.0.2","LocalBindPort":9193}]}}))
    .unwrap();
    let specs = upstream_specs(&svc);
    let got: Vec<(String, String, String)> = specs
        .iter()
        .map(|s| (s.name.clone(), s.datacenter.clone(), s.bind.to_string()))
        .collect();
    assert_eq!(
        got,
        [
            ("cache".into(), String::new(), "127.0.0.1:9191".into()),
            // A prepared query is served (executed and re-polled), not skipped.
            ("q".into(), String::new(), "127.0.0.1:9192".into()),
            (
                "sock".into(),
                String::new(),
                "unix:/tmp/s (mode 0660)".into()
            ),
            ("other".into(), "dc2".into(), "127.0.0.2:9193".into())
        ]
    );
    assert_eq!(
        specs.iter().map(|s| s.query).collect::<Vec<_>>(),
        [false, true, false, false]
    );
}

#[test]
fn upstream_protocol_from_the_merged_config_then_the_chain() {
    let svc: AgentService =
        serde_json::from_value(json!({"Kind":"connect-proxy","ID":"p","Proxy":{
        "DestinationServiceName":"web","Upstreams":[
            {"DestinationName":"db","LocalBindPort":9191,"Config":{"protocol":"grpc"}},
            {"DestinationName":"api","LocalBindPort":9192,"Config":null},
            {"DestinationName":"cache","LocalBindPort":9193}]}}))
        .unwrap();
    let got: Vec<Option<Protocol>> = upstream_specs(&svc).iter().map(|s| s.protocol).collect();
    assert_eq!(got, [Some(Protocol::Grpc), None, None]);
    let http2 = chain(&json!({"Chain":{"Protocol":"http2"}}));
    let tcp = chain(&json!({"Chain":{"Protocol":"tcp"}}));
    assert_eq!(
        upstream_protocol(Some(Protocol::Grpc), Some(&tcp)),
        Protocol::Grpc
    );
    assert_eq!(upstream_protocol(None, Some(&http2)), Protocol::Http2);
    assert_eq!(upstream_protocol(None, Some(&tcp)), Protocol::Tcp);
    assert_eq!(upstream_protocol(None, None), Protocol::Tcp);
}

#[test]
fn go_durations() {
    assert_eq!(parse_go_duration("5s"), Some(Duration::from_secs(5)));
    assert_eq!(parse_go_duration("1m30s"), Some(Duration::from_secs(90)));
    assert_eq!(parse_go_duration("250ms"), Some(Duration::from_millis(250)));
    assert_eq!(parse_go_duration("0"), Some(Duration::ZERO));
    assert_eq!(parse_go_duration("5"), None);
    assert_eq!(parse_go_duration("5x"), None);
    assert_eq!(parse_go_duration(""), None);
}

#[test]
fn snapshot_needs_every_piece() {
    let mut st = State::default();
    assert!(st.snapshot().is_none());
    st.service = Some(
        serde_json::from_value(
            json!({"Kind":"connect-proxy","ID":"p","Port":21000,"Proxy":{
            "DestinationServiceName":"db","LocalServicePort":8080,
            "Upstreams":[{"DestinationName":"cache","LocalBindPort":9191}]},"Datacenter":"dc1"}),
        )
        .unwrap(),
    );
    st.policy = Some(DefaultPolicy::DENY);
    st.intentions = Some(Arc::new(IntentionSet::new("db", vec![])));
    assert!(st.snapshot().is_none(), "no leaf, no roots");
    let ca = crate::testutil::TestCa::new("CA");
    st.roots = Some(ca.roots());
    assert!(st.snapshot().is_none(), "no leaf");
    st.leaf = Some(ca.service_leaf("db").leaf());
    st.health.insert(
        ("cache".into(), String::new(), String::new()),
        serde_json::from_value(
            json!([{"Node":{"Node":"n1","Address":"10.0.0.5","Datacenter":"dc1"},
            "Service":{"ID":"cache-sidecar-proxy","Address":"","Port":21001}}]),
        )
        .unwrap(),
    );
    assert!(
        st.snapshot().is_none(),
        "no answer about the mesh entry yet"
    );
    st.mesh = Some(None);
    assert!(
        st.snapshot().is_none(),
        "no answer about the jwt-provider entries yet"
    );
    st.jwt = Some(Arc::default());
    let snap = st.snapshot().unwrap();
    assert_eq!(snap.public_listener.to_string(), "0.0.0.0:21000");
    assert_eq!(snap.local_app.to_string(), "127.0.0.1:8080");
    let up = snap.upstream("cache").unwrap();
    assert_eq!(
        up.targets[0].endpoints[0].host, "10.0.0.5",
        "empty Service.Address: Node.Address"
    );
    assert_eq!(up.targets[0].endpoints[0].port, 21001);
    // Intentions fetched for another destination do not complete the snapshot.
    st.intentions = Some(Arc::new(IntentionSet::new("web", vec![])));
    assert!(st.snapshot().is_none());
}

#[test]
fn transparent_snapshot_carries_listener_virtual_ips_and_dialed_directly() {
    let ca = crate::testutil::TestCa::new("CA");
    let mut st = State {
        roots: Some(ca.roots()),
        leaf: Some(ca.service_leaf("web").leaf()),
        policy: Some(DefaultPolicy::DENY),
        intentions: Some(Arc::new(IntentionSet::new("web", vec![]))),
        mesh: Some(None),
        jwt: Some(Arc::default()),
        ..State::default()
    };
    st.service = Some(
        serde_json::from_value(
            json!({"Kind":"connect-proxy","ID":"web-sidecar-proxy","Port":21000,
            "Datacenter":"dc1","Proxy":{"DestinationServiceName":"web","LocalServicePort":8080,
            "Mode":"transparent","TransparentProxy":{"OutboundListenerPort":15006},
            "Upstreams":[{"DestinationName":"cache","LocalBindPort":9191}]}}),
        )
        .unwrap(),
    );
    let plain = st.snapshot().unwrap();
    assert_eq!(
        plain.transparent.map(|t| t.outbound.to_string()).as_deref(),
        Some("127.0.0.1:15006")
    );
    assert!(plain.upstream("cache").unwrap().virtual_ips.is_empty());
    // A chain redirecting cache to cache-v2, whose instances carry cache-v2's virtual IP.
    st.chains.insert(
        ("cache".into(), String::new()),
        chain(&json!({"Chain":{"ServiceName":"cache","StartNode":"resolver:v2",
            "Nodes":{"resolver:v2":{"Type":"resolver","Resolver":{"Target":"cache-v2.default.default.dc1"}}},
            "Targets":{"cache-v2.default.default.dc1":{"ID":"cache-v2.default.default.dc1",
                "Service":"cache-v2","Datacenter":"dc1"}},
            "AutoVirtualIPs":["240.0.0.2"],"ManualVirtualIPs":[]}})),
    );
    st.health.insert(
        ("cache-v2".into(), String::new(), String::new()),
        serde_json::from_value(json!([
            {"Node":{"Node":"n1","Address":"10.0.0.5","Datacenter":"dc1"},
             "Service":{"ID":"v2-1","Port":21001,
                "TaggedAddresses":{"consul-virtual":{"Address":"240.0.0.3","Port":21001}},
                "Proxy":{"TransparentProxy":{"DialedDirectly":true}}}},
            {"Node":{"Node":"n2","Address":"10.0.0.6","Datacenter":"dc1"},
             "Service":{"ID":"v2-2","Port":21001,
                "TaggedAddresses":{"consul-virtual":{"Address":"240.0.0.3","Port":21001}}}}
        ]))
        .unwrap(),
    );
    let snap = st.snapshot().unwrap();
    let up = snap.upstream("cache").unwrap();
    let vips: Vec<String> = up.virtual_ips.iter().map(ToString::to_string).collect();
    assert_eq!(vips, ["240.0.0.2", "240.0.0.3"]);
    let dd: Vec<bool> = up.targets[0]
        .endpoints
        .iter()
        .map(|e| e.dialed_directly)
        .collect();
    assert_eq!(dd, [true, false]);
    assert_eq!(
        up.bind.to_string(),
        "127.0.0.1:9191",
        "the explicit listener stays"
    );
    // Direct mode: no transparent listener.
    if let Some(p) = st.service.as_mut().and_then(|s| s.proxy.as_mut()) {
        p.mode = "direct".into();
    }
    assert!(st.snapshot().unwrap().transparent.is_none());
}

#[test]
fn prepared_query_poll_interval_comes_from_proxy_config() {
    let cfg = |v: serde_json::Value| v.as_object().unwrap().clone();
    assert_eq!(query_poll_interval(&cfg(json!({}))), DEFAULT_QUERY_POLL);
    assert_eq!(
        DEFAULT_QUERY_POLL,
        Duration::from_secs(30),
        "Consul's proxycfg default"
    );
    assert_eq!(
        query_poll_interval(&cfg(json!({"prepared_query_poll_interval_ms": 500}))),
        Duration::from_millis(500)
    );
    assert_eq!(
        query_poll_interval(&cfg(json!({"prepared_query_poll_interval_ms": "750"}))),
        Duration::from_millis(750)
    );
    assert_eq!(
        query_poll_interval(&cfg(json!({"prepared_query_poll_interval_ms": 0}))),
        DEFAULT_QUERY_POLL,
        "zero would be a tight loop"
    );
}
