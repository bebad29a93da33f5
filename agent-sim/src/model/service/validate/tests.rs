//! Tests for registration validation texts and the Go-compatible helpers.

use super::*;
use crate::model::service::model::{ExposePath, Upstream};

#[test]
fn multierror_matches_go_multierror() {
    assert_eq!(multierror(&["a".into()]), "1 error occurred:\n\t* a\n\n");
    assert_eq!(
        multierror(&["a".into(), "b".into()]),
        "2 errors occurred:\n\t* a\n\t* b\n\n"
    );
}

#[test]
fn go_helpers() {
    assert_eq!(go_quote("a\"b\\c\n"), r#""a\"b\\c\n""#);
    assert_eq!(ip_is_v4("10.0.0.5"), Some(true));
    assert_eq!(
        ip_is_v4("::ffff:10.0.0.5"),
        Some(true),
        "Go's To4 accepts v4-mapped"
    );
    assert_eq!(ip_is_v4("fd00::1"), Some(false));
    assert_eq!(ip_is_v4("db.example"), None);
    assert_eq!(join_host_port("127.0.0.1", 9191), "127.0.0.1:9191");
    assert_eq!(join_host_port("::1", 9191), "[::1]:9191");
    assert!(is_any_address("0.0.0.0") && is_any_address("::") && is_any_address("[::]"));
    assert!(!is_any_address("127.0.0.1"));
}

#[test]
fn weights_texts() {
    let w = |passing, warning| Weights { passing, warning };
    assert_eq!(
        validate_weights(&w(0, 1)),
        Err("Passing must be greater than 0".into())
    );
    assert_eq!(
        validate_weights(&w(1, -1)),
        Err("Warning must be greater or equal than 0".into())
    );
    assert_eq!(
        validate_weights(&w(70000, 1)),
        Err("DNS Weight must be between 0 and 65535".into())
    );
    assert_eq!(validate_weights(&w(1, 0)), Ok(()));
}

#[test]
fn meta_texts() {
    let meta = |k: &str, v: &str| BTreeMap::from([(k.to_owned(), v.to_owned())]);
    let typical = ServiceKind::Typical;
    assert_eq!(
        validate_service_meta(&typical, &meta("a b", "v")),
        Err("Couldn't load metadata pair ('a b', 'v'): Key contains invalid characters".into())
    );
    assert_eq!(
        validate_service_meta(&typical, &meta("consul-x", "v")),
        Err("Couldn't load metadata pair ('consul-x', 'v'): Key prefix 'consul-' is reserved for internal use".into())
    );
    let wan = meta("consul-wan-federation", "1");
    assert!(validate_service_meta(&typical, &wan).is_err());
    assert_eq!(
        validate_service_meta(&ServiceKind::MeshGateway, &wan),
        Ok(())
    );
    let long_value = "x".repeat(513);
    assert_eq!(
        validate_service_meta(&typical, &meta("k", &long_value)),
        Err(format!(
            "Couldn't load metadata pair ('k', '{long_value}'): Value is too long (limit: 512 characters)"
        ))
    );
    let many: BTreeMap<String, String> =
        (0..65).map(|i| (format!("k{i}"), String::new())).collect();
    assert_eq!(
        validate_service_meta(&typical, &many),
        Err("Node metadata cannot contain more than 64 key/value pairs".into())
    );
}

fn proxy(upstreams: Vec<Upstream>) -> NodeService {
    let mut ns = NodeService {
        kind: ServiceKind::ConnectProxy,
        id: "p".into(),
        service: "p".into(),
        port: 21000,
        ..Default::default()
    };
    ns.proxy.destination_service_name = "web".into();
    ns.proxy.upstreams = upstreams;
    ns
}

fn upstream(name: &str, port: u16) -> Upstream {
    Upstream {
        destination_type: "service".into(),
        destination_name: name.into(),
        local_bind_port: port,
        ..Default::default()
    }
}

#[test]
fn connect_proxy_rules() {
    let mut ns = proxy(vec![]);
    assert!(validate_node_service(&ns, None).is_empty());
    ns.port = 0;
    ns.proxy.destination_service_name = " ".into();
    ns.connect.native = true;
    assert_eq!(
        validate_node_service(&ns, None),
        vec![
            "Port or SocketPath must be set for a connect-proxy",
            "Proxy.DestinationServiceName must be non-empty for Connect proxy services",
            "A Proxy cannot also be Connect Native, only typical services",
            "Port or SocketPath must be set for a Connect native service.",
        ]
    );
    assert_eq!(
        validate_for_agent(&ns, None).len(),
        3,
        "the agent variant skips the port rule"
    );
    let mut wild = proxy(vec![]);
    wild.proxy.destination_service_name = "*".into();
    assert_eq!(
        validate_node_service(&wild, None),
        vec!["Proxy.DestinationServiceName must not be a wildcard for Connect proxy services"]
    );
}

#[test]
fn upstream_rules() {
    let dup = proxy(vec![upstream("db", 9191), upstream("db", 9192)]);
    assert_eq!(
        validate_node_service(&dup, None),
        vec![
            r#"upstreams cannot contain duplicates of [type="service", name="db", partition="", namespace="", peer="", datacenter=""]"#
        ]
    );
    let same_bind = proxy(vec![upstream("db", 9191), upstream("cache", 9191)]);
    assert_eq!(
        validate_node_service(&same_bind, None),
        vec![
            r#"upstreams cannot contain duplicates by local bind address and port or unix path; "127.0.0.1:9191" is specified twice"#
        ]
    );
    let bad = proxy(vec![
        Upstream {
            destination_type: "x".into(),
            ..upstream("a", 1)
        },
        upstream("", 2),
        upstream("*", 3),
        Upstream {
            destination_peer: "p".into(),
            datacenter: "dc2".into(),
            ..upstream("b", 4)
        },
        upstream("c", 0),
        Upstream {
            local_bind_socket_path: "/s".into(),
            ..upstream("d", 5)
        },
    ]);
    assert_eq!(
        validate_node_service(&bad, None),
        vec![
            r#"unknown upstream destination type: "x""#,
            "upstream destination name cannot be empty",
            "upstream destination name cannot be a wildcard",
            "upstream cannot specify both destination peer and datacenter",
            "upstream local bind port or local socket path must be defined and nonzero",
            "only one of upstream local bind port or local socket path can be defined and nonzero",
        ]
    );
}

#[test]
fn expose_rules() {
    let mut ns = proxy(vec![]);
    ns.proxy.expose.paths = vec![
        ExposePath {
            listener_port: 0,
            path: String::new(),
            ..Default::default()
        },
        ExposePath {
            listener_port: 0,
            path: "/m".into(),
            protocol: "TCP".into(),
            ..Default::default()
        },
    ];
    assert_eq!(
        validate_node_service(&ns, None),
        vec![
            "expose.paths: empty path exposed",
            "expose.paths: invalid listener port: 0",
            "expose.paths: duplicate listener ports exposed",
            "expose.paths: invalid listener port: 0",
            "protocol 'tcp' not supported for path: /m, must be in: [http http2]",
        ]
    );
}

#[test]
fn gateway_sidecar_and_native_rules() {
    let mut gw = NodeService {
        kind: ServiceKind::MeshGateway,
        ..Default::default()
    };
    gw.proxy.destination_service_name = "web".into();
    gw.proxy.upstreams = vec![upstream("db", 1)];
    let sidecar = ServiceDefinition {
        id: "x".into(),
        ..Default::default()
    };
    assert_eq!(
        validate_node_service(&gw, Some(&sidecar)),
        vec![
            "Port must be non-zero for a mesh-gateway",
            "A mesh-gateway cannot have a sidecar service defined",
            "The Proxy.DestinationServiceName configuration is invalid for a mesh-gateway",
            "The Proxy.Upstreams configuration is invalid for a mesh-gateway",
            "A SidecarService cannot specify an ID as this is managed by the agent",
        ]
    );
    let ingress = NodeService {
        kind: ServiceKind::IngressGateway,
        ..Default::default()
    };
    assert!(
        validate_node_service(&ingress, None).is_empty(),
        "ingress needs no port"
    );
    let mut native = NodeService {
        service: "web".into(),
        ..Default::default()
    };
    native.connect.native = true;
    assert_eq!(
        validate_node_service(&native, None),
        vec!["Port or SocketPath must be set for a Connect native service."]
    );
}

#[test]
fn tagged_address_family_rule() {
    let mut ns = NodeService::default();
    ns.tagged_addresses
        .insert("lan_ipv4".into(), Default::default());
    assert_eq!(
        validate_tagged_addresses(&ns),
        Err(r#"Service tagged address "lan_ipv4" must be a valid ipv4 address"#.into())
    );
    ns.tagged_addresses.clear();
    ns.tagged_addresses.insert(
        "wan_ipv6".into(),
        crate::model::service::ServiceAddress {
            address: "not-an-ip".into(),
            port: 1,
        },
    );
    assert_eq!(
        validate_tagged_addresses(&ns),
        Ok(()),
        "Consul never checks wan_ipv6"
    );
}
