//! Wire-shape tests of `agent_sim::service` through its public API: insta snapshots of the
//! agent, health and catalog JSON (checked against the reference's examples and key orders),
//! the register error table with Consul's exact texts, and `ContentHash` behaviour.

use std::collections::BTreeMap;

use agent_sim::service::{
    HealthCheck, Node, NodeService, RegisterContext, RegisterError, Registration,
    agent_service_json, agent_services_json, catalog_service_json, content_hash, decode_register,
    expand_registration, health_entry_json,
};

const DC: &str = "dc1";

fn register(body: &str) -> Result<Registration, RegisterError> {
    register_with(body, &[])
}

fn register_with(body: &str, existing: &[&NodeService]) -> Result<Registration, RegisterError> {
    let def = decode_register(body.as_bytes())?;
    expand_registration(def, &RegisterContext::new("n1", existing, 30))
}

fn sidecar_registration() -> Registration {
    register(r#"{"Name":"web","Port":8080,"Connect":{"SidecarService":{}}}"#).unwrap()
}

/// The agent's own node as Consul reports it (reference §7 example).
fn agent_node() -> Node {
    let addrs =
        ["lan", "lan_ipv4", "wan", "wan_ipv4"].map(|k| (k.to_owned(), "10.0.0.5".to_owned()));
    Node {
        id: "40e4a748-2192-161a-0510-9bf59fe950b5".into(),
        name: "n1".into(),
        address: "10.0.0.5".into(),
        datacenter: DC.into(),
        tagged_addresses: BTreeMap::from(addrs),
        meta: BTreeMap::from([
            ("consul-network-segment".to_owned(), String::new()),
            ("consul-version".to_owned(), "1.22.0".to_owned()),
        ]),
        create_index: 5,
        modify_index: 6,
    }
}

fn serf_health() -> HealthCheck {
    HealthCheck {
        node: "n1".into(),
        check_id: "serfHealth".into(),
        name: "Serf Health Status".into(),
        status: "passing".into(),
        output: "Agent alive and reachable".into(),
        create_index: 5,
        modify_index: 5,
        ..HealthCheck::default()
    }
}

#[test]
fn agent_service_plain() {
    let reg = register(
        r#"{"Name":"web","ID":"web-1","Port":8080,"Address":"10.0.0.7","Tags":["v1","blue"],
            "Meta":{"version":"1.2","Team":"payments"},"Weights":{"Passing":10,"Warning":1},
            "Check":{"HTTP":"http://10.0.0.7:8080/health","Interval":"10s"}}"#,
    )
    .unwrap();
    insta::assert_json_snapshot!(
        "agent_service_plain",
        agent_service_json(&reg.services[0], DC)
    );
}

#[test]
fn agent_service_sidecar() {
    let reg = sidecar_registration();
    insta::assert_json_snapshot!(
        "agent_service_sidecar",
        agent_service_json(&reg.services[1], DC)
    );
}

#[test]
fn agent_service_proxy_with_upstreams_and_config() {
    let reg = register(
        r#"{"Name":"web-sidecar-proxy","Kind":"connect-proxy","Port":21000,"Address":"10.0.0.5",
            "Proxy":{"DestinationServiceName":"web","DestinationServiceID":"web",
              "LocalServiceAddress":"127.0.0.1","LocalServicePort":8080,
              "Mode":"transparent","TransparentProxy":{"OutboundListenerPort":15001},
              "Config":{"protocol":"http","local_connect_timeout_ms":1000.0,
                        "zeta":{"b":1,"a":[true,null]}},
              "Upstreams":[
                {"DestinationName":"db","LocalBindPort":9191},
                {"DestinationType":"prepared_query","DestinationName":"geo","Datacenter":"dc2",
                 "LocalBindSocketPath":"/run/geo.sock","LocalBindSocketMode":"0600",
                 "Config":{"connect_timeout_ms":5000},"MeshGateway":{"Mode":"local"}}],
              "Expose":{"Paths":[{"ListenerPort":21500,"Path":"/metrics","LocalPathPort":9102}]}}}"#,
    )
    .unwrap();
    insta::assert_json_snapshot!(
        "agent_service_proxy",
        agent_service_json(&reg.services[0], DC)
    );
}

#[test]
fn agent_services_map() {
    let reg = sidecar_registration();
    insta::assert_json_snapshot!("agent_services", agent_services_json(&reg.services, DC));
}

#[test]
fn health_entry_for_sidecar() {
    let mut reg = sidecar_registration();
    let node = agent_node();
    let serf = serf_health();
    reg.checks[0].status = "passing".into();
    let mut checks: Vec<&HealthCheck> = vec![&serf];
    checks.extend(reg.checks.iter());
    insta::assert_json_snapshot!(
        "health_entry_sidecar",
        health_entry_json(&node, &reg.services[1], &checks)
    );
}

#[test]
fn catalog_service_items() {
    let reg = register(
        r#"{"Name":"web","Port":8080,"Address":"10.0.0.7","Tags":["v1"],
            "Connect":{"SidecarService":{}}}"#,
    )
    .unwrap();
    let node = agent_node();
    let items: Vec<_> = reg
        .services
        .iter()
        .map(|s| catalog_service_json(&node, s))
        .collect();
    insta::assert_json_snapshot!("catalog_service", items);
}

#[test]
fn health_entry_for_catalog_registration() {
    let reg = agent_sim::service::decode_catalog_register(
        br#"{"Node":"ext-1","Address":"10.1.0.9","Datacenter":"dc1",
            "Service":{"Service":"db","ID":"db-1","Port":5432,"Address":"db.internal",
                "Connect":{"Native":true},"Meta":{"zone":"b","Version":"2"}},
            "Checks":[{"Name":"db tcp","ServiceID":"db-1","Status":"passing",
                "Interval":"5s","Definition":{"TCP":"db.internal:5432","Interval":"5s",
                "Timeout":"1s","DeregisterCriticalServiceAfter":"90m","TTL":"0s"}},
              {"CheckID":"db-ttl","Name":"db ttl","ServiceID":"db-1",
                "Definition":{"TTL":"30s","Header":{"X-B":["2"],"X-A":["1"]}}}]}"#,
        DC,
    )
    .unwrap();
    let service = reg.service.unwrap();
    let checks: Vec<&HealthCheck> = reg.checks.iter().collect();
    insta::assert_json_snapshot!(
        "health_entry_catalog",
        health_entry_json(&reg.node, &service, &checks)
    );
}

#[test]
fn register_error_table() {
    let bad = |s: &str| Err::<(), _>(RegisterError::BadRequest(s.into()));
    let cases = [
        (
            r#"{"Name":"web","Foo":1}"#,
            bad(r#"Request decode failed: json: unknown field "Foo""#),
        ),
        ("", bad("Request decode failed: EOF")),
        (r#"{"Port":80}"#, bad("Missing service name")),
        (
            r#"{"Name":"web","Address":"0.0.0.0"}"#,
            bad("Invalid service address"),
        ),
        (
            r#"{"Name":"web","Check":{"TTL":"10s","Status":"ok"}}"#,
            bad("Status for checks must 'passing', 'warning', 'critical'"),
        ),
        (
            r#"{"Name":"p","Kind":"connect-proxy","Proxy":{"DestinationServiceName":"web"}}"#,
            bad(
                "Validation failed: 1 error occurred:\n\t* Port or SocketPath must be set for a connect-proxy\n\n",
            ),
        ),
        (
            r#"{"Name":"p","Kind":"connect-proxy","Port":21000}"#,
            bad(
                "Validation failed: 1 error occurred:\n\t* Proxy.DestinationServiceName must be non-empty for Connect proxy services\n\n",
            ),
        ),
        (
            r#"{"Name":"p","Kind":"connect-proxy","Port":21000,"Proxy":{"DestinationServiceName":"web",
                "Upstreams":[{"DestinationName":"db","LocalBindPort":1},{"DestinationName":"db","LocalBindPort":2}]}}"#,
            bad(
                "Validation failed: 1 error occurred:\n\t* upstreams cannot contain duplicates of [type=\"service\", name=\"db\", partition=\"\", namespace=\"\", peer=\"\", datacenter=\"\"]\n\n",
            ),
        ),
        (
            r#"{"Name":"p","Kind":"connect-proxy","Proxy":{}}"#,
            bad(
                "Validation failed: 2 errors occurred:\n\t* Port or SocketPath must be set for a connect-proxy\n\t* Proxy.DestinationServiceName must be non-empty for Connect proxy services\n\n",
            ),
        ),
        (
            r#"{"Name":"web","Weights":{"Passing":0}}"#,
            bad("Invalid Weights: Passing must be greater than 0"),
        ),
        (
            r#"{"Name":"web","Meta":{"consul-x":"1"}}"#,
            bad(
                "Invalid Service Meta: Couldn't load metadata pair ('consul-x', '1'): Key prefix 'consul-' is reserved for internal use",
            ),
        ),
        (
            r#"{"Name":"web","Check":{"Notes":"n"}}"#,
            bad("Invalid check: TTL must be > 0 for TTL checks"),
        ),
        (
            r#"{"Name":"web","Port":1,"Connect":{"SidecarService":{"Check":{"TCP":"a:1"}}}}"#,
            bad(
                "Invalid check in sidecar_service: Interval must be > 0 for Script, HTTP, H2PING, TCP, UDP or OSService checks",
            ),
        ),
        (
            r#"{"Name":"web","Port":1,"Connect":{"SidecarService":{"Meta":{"a b":"c"}}}}"#,
            bad(
                "Invalid SidecarService: Couldn't load metadata pair ('a b', 'c'): Key contains invalid characters",
            ),
        ),
        (
            r#"{"Name":"web","Port":1,"Connect":{"SidecarService":{"Proxy":{"Upstreams":[{"LocalBindPort":9}]}}}}"#,
            bad(
                "Failed Validation: 1 error occurred:\n\t* upstream destination name cannot be empty\n\n",
            ),
        ),
        (
            r#"{"Name":"web","Port":1,"Connect":{"SidecarService":{"ID":"mine"}}}"#,
            bad(
                "Validation failed: 1 error occurred:\n\t* A SidecarService cannot specify an ID as this is managed by the agent\n\n",
            ),
        ),
    ];
    for (body, want) in cases {
        assert_eq!(register(body).map(|_| ()), want, "body {body}");
    }
}

#[test]
fn content_hash_tracks_content_only() {
    let reg = sidecar_registration();
    let sc = &reg.services[1];
    let hash = content_hash(sc, DC);
    assert!(
        !hash.is_empty() && hash.chars().all(|c| c.is_ascii_hexdigit()),
        "{hash}"
    );
    assert!(
        !hash.starts_with('0') || hash.len() == 1,
        "%x has no zero padding: {hash}"
    );
    assert_eq!(content_hash(&sc.clone(), DC), hash, "stable");
    assert_eq!(
        content_hash(sc, "dc2"),
        hash,
        "the datacenter is not hashed"
    );
    let reindexed = NodeService {
        create_index: 99,
        modify_index: 100,
        ..sc.clone()
    };
    assert_eq!(
        content_hash(&reindexed, DC),
        hash,
        "local-state indexes are not part of it"
    );
    let body = agent_service_json(sc, DC);
    assert_eq!(
        body["ContentHash"],
        hash.as_str(),
        "the body carries the same hash"
    );

    let mut moved = sc.clone();
    moved.port += 1;
    let mut tagged = sc.clone();
    tagged.tags.push("canary".into());
    let mut configured = sc.clone();
    configured
        .proxy
        .config
        .insert("protocol".into(), "http".into());
    let mut upstream = sc.clone();
    upstream.proxy.upstreams.push(agent_sim::service::Upstream {
        destination_type: "service".into(),
        destination_name: "db".into(),
        local_bind_port: 9191,
        ..Default::default()
    });
    for changed in [&moved, &tagged, &configured, &upstream] {
        assert_ne!(content_hash(changed, DC), hash, "{changed:?}");
    }
}

/// Any JSON shaped roughly like a registration: keys from the real vocabulary (in odd
/// spellings) with arbitrary scalar, list and object values.
fn registration_like() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
    use proptest::prelude::*;
    let key = prop::sample::select(vec![
        "Name",
        "name",
        "ID",
        "Port",
        "port",
        "Address",
        "Kind",
        "Tags",
        "Meta",
        "Check",
        "Checks",
        "TTL",
        "Interval",
        "TCP",
        "Proxy",
        "Connect",
        "SidecarService",
        "sidecar_service",
        "DestinationServiceName",
        "Upstreams",
        "DestinationName",
        "LocalBindPort",
        "Weights",
        "Passing",
        "TaggedAddresses",
        "Status",
        "Bogus",
    ]);
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        (0u16..=65535).prop_map(serde_json::Value::from),
        prop::sample::select(vec![
            "web",
            "",
            "connect-proxy",
            "10s",
            "0.0.0.0",
            "passing",
            "x"
        ])
        .prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..6).prop_map(|m| {
                serde_json::Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            }),
        ]
    })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 512,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x5e_71ce),
        ..Default::default()
    })]

    #[test]
    fn arbitrary_bodies_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
        let _ = register(&String::from_utf8_lossy(&bytes));
        let _ = agent_sim::service::decode_catalog_register(&bytes, DC);
    }

    #[test]
    fn registration_like_bodies_never_panic_and_render(mut body in registration_like(), named: bool) {
        if let (true, Some(obj)) = (named, body.as_object_mut()) {
            obj.insert("Name".into(), "web".into());
        }
        let text = body.to_string();
        if let Ok(reg) = register(&text) {
            for svc in &reg.services {
                let json = agent_service_json(svc, DC);
                proptest::prop_assert_eq!(&json["ContentHash"], &serde_json::Value::from(content_hash(svc, DC)));
            }
        }
        let _ = agent_sim::service::decode_catalog_register(text.as_bytes(), DC);
    }
}
