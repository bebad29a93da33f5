//! Tests for registration expansion: sidecars, ports, checks, errors and indexes.

use super::*;
use crate::go::duration::GoDuration;
use crate::model::service::{HealthCheckDefinition, decode_register};

fn def(body: &str) -> ServiceDefinition {
    decode_register(body.as_bytes()).unwrap()
}

fn expand(body: &str, ctx: &RegisterContext<'_>) -> Result<Registration, RegisterError> {
    expand_registration(def(body), ctx)
}

fn ctx<'a>(existing: &'a [&'a NodeService]) -> RegisterContext<'a> {
    RegisterContext::new("n1", existing, 30)
}

#[test]
fn sidecar_expansion_follows_consuls_defaults() {
    let body = r#"{"Name":"web","ID":"web-1","Port":8080,"Address":"10.0.0.5",
        "Tags":["v1"],"Meta":{"team":"a"},"Locality":{"Region":"r1"},
        "Connect":{"SidecarService":{"Token":"side-token"}},"Token":"svc-token"}"#;
    let reg = expand(body, &ctx(&[])).unwrap();
    let [web, sc] = reg.services.as_slice() else {
        panic!("two services expected")
    };
    assert_eq!(web.id, "web-1");
    assert!(!web.locally_registered_as_sidecar);
    assert_eq!(
        sc.id, "web-1-sidecar-proxy",
        "ID derives from the parent ID"
    );
    assert_eq!(
        sc.service, "web-sidecar-proxy",
        "Name derives from the parent name"
    );
    assert_eq!(sc.kind, ServiceKind::ConnectProxy);
    assert_eq!(sc.port, 21000);
    assert_eq!(sc.address, "10.0.0.5");
    assert_eq!(sc.tags, vec!["v1"]);
    assert_eq!(sc.meta.get("team").map(String::as_str), Some("a"));
    assert_eq!(sc.locality.as_ref().map(|l| l.region.as_str()), Some("r1"));
    assert!(sc.locally_registered_as_sidecar);
    assert_eq!(sc.proxy.destination_service_name, "web");
    assert_eq!(sc.proxy.destination_service_id, "web-1");
    assert_eq!(sc.proxy.local_service_address, "127.0.0.1");
    assert_eq!(sc.proxy.local_service_port, 8080);
    assert_eq!(
        sc.tagged_addresses["lan_ipv4"],
        ServiceAddress {
            address: "10.0.0.5".into(),
            port: 21000
        }
    );
    assert_eq!(sc.tagged_addresses["wan_ipv4"].port, 21000);

    let ids: Vec<_> = reg.checks.iter().map(|c| c.check_id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "service:web-1-sidecar-proxy:1",
            "service:web-1-sidecar-proxy:2"
        ]
    );
    let (listen, alias) = (&reg.checks[0], &reg.checks[1]);
    assert_eq!(listen.name, "Connect Sidecar Listening");
    assert_eq!(
        (listen.type_.as_str(), listen.tcp.as_str()),
        ("tcp", "10.0.0.5:21000")
    );
    assert_eq!(listen.interval, "10s");
    assert_eq!(alias.name, "Connect Sidecar Aliasing web-1");
    assert_eq!(
        (alias.type_.as_str(), alias.alias_service.as_str()),
        ("alias", "web-1")
    );
    assert_eq!(alias.interval, "");
    for c in &reg.checks {
        assert_eq!((c.status.as_str(), c.node.as_str()), ("critical", "n1"));
        assert_eq!(
            (c.service_id.as_str(), c.service_name.as_str()),
            (sc.id.as_str(), "web-sidecar-proxy")
        );
    }
    assert_eq!(
        reg.tokens,
        RegistrationTokens {
            service: "svc-token".into(),
            sidecar: Some("side-token".into())
        }
    );
    let acl: Vec<_> = reg
        .acl
        .iter()
        .map(|w| (w.service.as_str(), w.token.as_deref()))
        .collect();
    assert_eq!(
        acl,
        [
            ("web", None),
            ("web-sidecar-proxy", Some("side-token")),
            ("web", Some("side-token"))
        ]
    );
}

#[test]
fn sidecar_without_address_checks_local_service_address_and_socket_parent() {
    let reg = expand(
        r#"{"Name":"web","Port":8080,"Connect":{"SidecarService":{}}}"#,
        &ctx(&[]),
    )
    .unwrap();
    assert_eq!(reg.checks[0].tcp, "127.0.0.1:21000");
    assert!(
        reg.services[1].tagged_addresses.is_empty(),
        "no address, no default tagged addresses"
    );
    let reg = expand(
        r#"{"Name":"web","SocketPath":"/run/web.sock","Connect":{"SidecarService":{}}}"#,
        &ctx(&[]),
    )
    .unwrap();
    let p = &reg.services[1].proxy;
    assert_eq!(p.local_service_socket_path, "/run/web.sock");
    assert_eq!(
        (p.local_service_address.as_str(), p.local_service_port),
        ("", 0)
    );
}

#[test]
fn sidecar_values_given_are_kept() {
    let body = r#"{"Name":"web","Port":8080,"Tags":["a"],"Connect":{"SidecarService":{
        "Name":"edge","Port":19000,"Tags":["b"],
        "Proxy":{"LocalServicePort":9000,"Upstreams":[{"DestinationName":"db","LocalBindPort":9191}]},
        "Checks":[{"TTL":"10s"}]}}}"#;
    let reg = expand(body, &ctx(&[])).unwrap();
    let sc = &reg.services[1];
    assert_eq!((sc.service.as_str(), sc.port), ("edge", 19000));
    assert_eq!(sc.tags, vec!["b"]);
    assert_eq!(sc.proxy.local_service_port, 9000);
    assert_eq!(
        sc.proxy.upstreams[0].destination_type, "service",
        "type defaulted"
    );
    assert_eq!(reg.checks.len(), 1, "given checks replace the default ones");
    assert_eq!(reg.checks[0].check_id, "service:web-sidecar-proxy");
    assert_eq!(reg.checks[0].name, "Service 'edge' check");
}

fn svc(id: &str, port: u16) -> NodeService {
    NodeService {
        id: id.into(),
        service: id.into(),
        port,
        create_index: 7,
        modify_index: 7,
        ..Default::default()
    }
}

#[test]
fn sidecar_ports_skip_used_and_keep_existing() {
    let body = r#"{"Name":"web","Port":8080,"Connect":{"SidecarService":{}}}"#;
    let used = [
        &svc("a", 21000),
        &svc("b", 21001),
        &svc("c", 21003),
        &svc("d", 80),
    ];
    assert_eq!(expand(body, &ctx(&used)).unwrap().services[1].port, 21002);
    let existing = [&svc("a", 21000), &svc("web-sidecar-proxy", 21007)];
    let reg = expand(body, &ctx(&existing)).unwrap();
    assert_eq!(
        reg.services[1].port, 21007,
        "re-registration keeps the sidecar's port"
    );
    assert_eq!(
        (reg.services[1].create_index, reg.services[1].modify_index),
        (7, 30)
    );
    let parent_in_range = expand(
        r#"{"Name":"web","Port":21000,"Connect":{"SidecarService":{}}}"#,
        &ctx(&[]),
    )
    .unwrap();
    assert_eq!(
        parent_in_range.services[1].port, 21001,
        "the new parent's port counts as used"
    );

    let mut small = ctx(&used);
    small.sidecar_max_port = 21001;
    assert_eq!(
        expand(body, &small),
        Err(RegisterError::Internal("no port provided for sidecar_service and none left in the configured range [21000, 21001]".into()))
    );
    small.sidecar_min_port = 0;
    assert_eq!(
        expand(body, &small),
        Err(RegisterError::Internal(
            "no port provided for sidecar_service and auto-assignment disabled in config".into()
        ))
    );
}

#[test]
fn service_checks_ids_names_statuses() {
    let one = expand(r#"{"Name":"web","Check":{"TTL":"30s"}}"#, &ctx(&[])).unwrap();
    let c = &one.checks[0];
    assert_eq!(
        (c.check_id.as_str(), c.name.as_str()),
        ("service:web", "Service 'web' check")
    );
    assert_eq!((c.type_.as_str(), c.status.as_str()), ("ttl", "critical"));
    assert_eq!(c.ttl, Some(GoDuration(30_000_000_000)));
    let body = r#"{"Name":"web","Tags":["t"],"Check":{"TTL":"30s","Status":"passing"},
        "Checks":[{"CheckID":"own","Name":"mine","HTTP":"http://127.0.0.1/","Interval":"15s","Timeout":"2s"},{"AliasService":"db"}]}"#;
    let three = expand(body, &ctx(&[])).unwrap();
    let ids: Vec<_> = three.checks.iter().map(|c| c.check_id.as_str()).collect();
    assert_eq!(ids, ["service:web:1", "own", "service:web:3"]);
    assert_eq!(three.checks[0].status, "passing");
    let http = &three.checks[1];
    assert_eq!((http.name.as_str(), http.type_.as_str()), ("mine", "http"));
    assert_eq!(
        (http.interval.as_str(), http.timeout.as_str()),
        ("15s", "2s")
    );
    assert_eq!(http.service_tags, vec!["t"]);
    assert!(
        http.definition == HealthCheckDefinition::default(),
        "agent checks have Definition {{}}"
    );
}

#[test]
fn re_registration_keeps_check_state_and_indexes() {
    let body = r#"{"Name":"web","Check":{"TTL":"30s"}}"#;
    let first = expand(body, &ctx(&[])).unwrap();
    assert_eq!(
        (first.services[0].create_index, first.checks[0].modify_index),
        (30, 30)
    );
    let mut prev = first.checks.clone();
    prev[0].status = "passing".into();
    prev[0].output = "ok".into();
    let services: Vec<&NodeService> = first.services.iter().collect();
    let prev: Vec<&HealthCheck> = prev.iter().collect();
    let mut again = RegisterContext::new("n1", &services, 40);
    again.existing_checks = &prev;
    let second = expand(body, &again).unwrap();
    assert_eq!(
        (
            second.checks[0].status.as_str(),
            second.checks[0].output.as_str()
        ),
        ("passing", "ok")
    );
    assert_eq!(
        (
            second.services[0].create_index,
            second.services[0].modify_index
        ),
        (30, 30),
        "unchanged"
    );
    assert_eq!(
        (second.checks[0].create_index, second.checks[0].modify_index),
        (30, 30)
    );
    let changed = expand(r#"{"Name":"web","Port":1,"Check":{"TTL":"30s"}}"#, &again).unwrap();
    assert_eq!(
        (
            changed.services[0].create_index,
            changed.services[0].modify_index
        ),
        (30, 40)
    );
}

#[test]
fn default_tagged_addresses_and_their_validation() {
    let v6 = expand(r#"{"Name":"web","Address":"fd00::5","Port":80}"#, &ctx(&[])).unwrap();
    let keys: Vec<_> = v6.services[0]
        .tagged_addresses
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["lan_ipv6", "wan_ipv6"]);
    let given = expand(r#"{"Name":"web","Address":"10.0.0.1","Port":80,"TaggedAddresses":{"wan_ipv4":{"Address":"1.2.3.4","Port":81}}}"#, &ctx(&[])).unwrap();
    assert_eq!(
        given.services[0].tagged_addresses["wan_ipv4"].address, "1.2.3.4",
        "given ones win"
    );
    assert_eq!(given.services[0].tagged_addresses["lan_ipv4"].port, 80);
    let host = expand(
        r#"{"Name":"web","Address":"web.internal","Port":80}"#,
        &ctx(&[]),
    )
    .unwrap();
    assert!(host.services[0].tagged_addresses.is_empty());
    assert_eq!(
        expand(
            r#"{"Name":"web","TaggedAddresses":{"lan_ipv4":{"Address":"fd00::1"}}}"#,
            &ctx(&[])
        ),
        Err(RegisterError::Internal(
            r#"Service tagged address "lan_ipv4" must be a valid ipv4 address"#.into()
        ))
    );
}

#[test]
fn script_checks_are_refused_unless_enabled() {
    let body = r#"{"Name":"web","Check":{"Args":["/bin/true"],"Interval":"10s"}}"#;
    assert_eq!(
        expand(body, &ctx(&[])),
        Err(RegisterError::Internal("Scripts are disabled on this agent from remote calls; to enable, configure 'enable_script_checks' to true".into()))
    );
    let mut enabled = ctx(&[]);
    enabled.enable_remote_script_checks = true;
    assert_eq!(expand(body, &enabled).unwrap().checks[0].type_, "script");
}

#[test]
fn acl_requirements_cover_replaced_service_and_destination() {
    let existing = [&NodeService {
        id: "p1".into(),
        service: "old".into(),
        ..Default::default()
    }];
    let reg = expand(
        r#"{"Name":"proxy","ID":"p1","Kind":"connect-proxy","Port":1,"Proxy":{"DestinationServiceName":"web"}}"#,
        &ctx(&existing),
    )
    .unwrap();
    let names: Vec<_> = reg.acl.iter().map(|w| w.service.as_str()).collect();
    assert_eq!(names, ["proxy", "old", "web"]);
    assert!(reg.acl.iter().all(|w| w.token.is_none()));
}
