//! Read-shape snapshots (one realistic entry per kind), store behaviour (CAS, indexes, deletes,
//! protocol, central config) and key-spelling/weak-typing decoding.

use serde_json::json;

use super::*;

fn put(store: &mut ConfigEntries, body: &Value, index: u64) {
    let entry = decode_entry(body.to_string().as_bytes()).unwrap();
    assert!(
        store.upsert(entry, None, index).unwrap(),
        "upsert of {body}"
    );
}

fn pretty(store: &ConfigEntries, kind: Kind, name: &str) -> String {
    serde_json::to_string_pretty(&store.get(kind, name).unwrap().to_json()).unwrap()
}

/// proxy-defaults makes everything http, so routers, splitters and L7 intentions are allowed.
fn mesh() -> ConfigEntries {
    let mut s = ConfigEntries::new();
    put(
        &mut s,
        &json!({"kind": "proxy-defaults", "config": {"protocol": "http", "local_connect_timeout_ms": 1000},
               "mode": "transparent", "transparent_proxy": {"outbound_listener_port": 15001},
               "access_logs": {"enabled": true}, "meta": {"owner": "platform"}}),
        10,
    );
    put(
        &mut s,
        &json!({"Kind": "service-defaults", "Name": "web", "Protocol": "HTTP",
               "MeshGateway": {"Mode": "local"}, "LocalConnectTimeoutMs": "2000",
               "UpstreamConfig": {"Overrides": [{"Name": "db", "ConnectTimeoutMs": 5000,
                   "PassiveHealthCheck": {"Interval": "10s", "MaxFailures": 5}}]}}),
        11,
    );
    put(
        &mut s,
        &json!({"Kind": "service-resolver", "Name": "web", "ConnectTimeout": "15s", "RequestTimeout": "1m30s",
               "DefaultSubset": "v1",
               "Subsets": {"v2": {"Filter": "Service.Meta.version == 2"},
                           "v1": {"Filter": "Service.Meta.version == 1", "OnlyPassing": true}},
               "Failover": {"*": {"Datacenters": ["dc2", "dc3"]}},
               "LoadBalancer": {"Policy": "least_request", "LeastRequestConfig": {"ChoiceCount": 3}}}),
        12,
    );
    put(
        &mut s,
        &json!({"Kind": "service-splitter", "Name": "web",
               "Splits": [{"Weight": 90, "ServiceSubset": "v1"},
                          {"Weight": "10", "ServiceSubset": "v2",
                           "RequestHeaders": {"Set": {"x-canary": "1"}}}]}),
        13,
    );
    put(
        &mut s,
        &json!({"Kind": "service-router", "Name": "web",
               "Routes": [{"Match": {"HTTP": {"PathPrefix": "/admin", "Methods": ["get", "post"],
                                              "Header": [{"Name": "x-debug", "Present": true}]}},
                           "Destination": {"Service": "admin", "RequestTimeout": "2s", "NumRetries": 3,
                                           "RetryOn": ["5xx"], "RetryOnStatusCodes": [503]}}]}),
        14,
    );
    put(
        &mut s,
        &json!({"Kind": "service-intentions", "Name": "db", "Meta": {"team": "data"},
               "Sources": [
                   {"Name": "*", "Action": "deny"},
                   {"name": "web", "action": "allow", "description": "frontend"},
                   {"Name": "api", "Permissions": [
                       {"Action": "deny", "HTTP": {"PathPrefix": "/admin"}},
                       {"Action": "allow", "HTTP": {"PathPrefix": "/", "Methods": ["get", "head"],
                        "Header": [{"Name": "x-user", "Prefix": "svc-", "IgnoreCase": true}]}}]}]}),
        15,
    );
    s
}

#[test]
fn read_shape_service_intentions() {
    insta::assert_snapshot!(pretty(&mesh(), Kind::ServiceIntentions, "db"));
}

#[test]
fn read_shape_service_defaults() {
    insta::assert_snapshot!(pretty(&mesh(), Kind::ServiceDefaults, "web"));
}

#[test]
fn read_shape_proxy_defaults() {
    insta::assert_snapshot!(pretty(&mesh(), Kind::ProxyDefaults, "global"));
}

#[test]
fn read_shape_service_resolver() {
    insta::assert_snapshot!(pretty(&mesh(), Kind::ServiceResolver, "web"));
}

#[test]
fn read_shape_service_splitter() {
    insta::assert_snapshot!(pretty(&mesh(), Kind::ServiceSplitter, "web"));
}

#[test]
fn read_shape_service_router() {
    insta::assert_snapshot!(pretty(&mesh(), Kind::ServiceRouter, "web"));
}

#[test]
fn minimal_entries_keep_go_zero_values() {
    // Struct-typed fields without a pointer are never omitted by Go: `{}`; maps without
    // omitempty are `null`.
    let mut s = ConfigEntries::new();
    put(
        &mut s,
        &json!({"Kind": "service-defaults", "Name": "db"}),
        3,
    );
    put(
        &mut s,
        &json!({"Kind": "proxy-defaults", "Name": "global"}),
        4,
    );
    put(
        &mut s,
        &json!({"Kind": "service-defaults", "Name": "api", "Protocol": "http"}),
        5,
    );
    put(&mut s, &json!({"Kind": "service-router", "Name": "api"}), 6);
    let compact = |k, n| serde_json::to_string(&s.get(k, n).unwrap().to_json()).unwrap();
    assert_eq!(
        compact(Kind::ServiceDefaults, "db"),
        r#"{"Kind":"service-defaults","Name":"db","Protocol":"","TransparentProxy":{},"MeshGateway":{},"Expose":{},"CreateIndex":3,"ModifyIndex":3}"#
    );
    assert_eq!(
        compact(Kind::ProxyDefaults, "global"),
        r#"{"Kind":"proxy-defaults","Name":"global","Config":null,"TransparentProxy":{},"MeshGateway":{},"Expose":{},"AccessLogs":{},"CreateIndex":4,"ModifyIndex":4}"#
    );
    assert_eq!(
        compact(Kind::ServiceRouter, "api"),
        r#"{"Kind":"service-router","Name":"api","Routes":null,"CreateIndex":6,"ModifyIndex":6}"#
    );
}

#[test]
fn cas_and_indexes() {
    let mut s = ConfigEntries::new();
    let sd = |p: &str| {
        decode_entry(
            json!({"Kind": "service-defaults", "Name": "web", "Protocol": p})
                .to_string()
                .as_bytes(),
        )
        .unwrap()
    };
    assert_eq!(
        s.upsert(sd("tcp"), Some(5), 7),
        Ok(false),
        "cas on a missing entry other than 0 fails"
    );
    assert_eq!(s.upsert(sd("tcp"), Some(0), 7), Ok(true), "cas 0 creates");
    assert_eq!(
        s.upsert(sd("http"), Some(0), 8),
        Ok(false),
        "cas 0 on an existing entry fails"
    );
    assert_eq!(
        s.upsert(sd("http"), Some(6), 8),
        Ok(false),
        "stale cas fails"
    );
    assert_eq!(s.upsert(sd("http"), Some(7), 9), Ok(true));
    let e = s.get(Kind::ServiceDefaults, "web").unwrap();
    assert_eq!((e.create_index(), e.modify_index()), (7, 9));
    assert_eq!(s.max_index(), 9);

    assert_eq!(
        s.delete(Kind::ServiceDefaults, "web", Some(8), 10),
        Ok(false)
    );
    assert_eq!(
        s.delete(Kind::ServiceDefaults, "nope", Some(0), 10),
        Ok(false)
    );
    assert_eq!(
        s.delete(Kind::ServiceDefaults, "nope", None, 10),
        Ok(true),
        "idempotent"
    );
    assert_eq!(
        s.max_index(),
        9,
        "deleting nothing does not bump the table index"
    );
    assert_eq!(
        s.delete(Kind::ServiceDefaults, "web", Some(9), 11),
        Ok(true)
    );
    assert_eq!(s.max_index(), 11, "a deletion bumps the table index");
    assert!(s.get(Kind::ServiceDefaults, "web").is_none());

    let mut m = mesh();
    m.reset_indexes(2);
    assert_eq!(m.max_index(), 2);
    assert!(
        Kind::ALL
            .iter()
            .flat_map(|k| m.list(*k))
            .all(|e| e.create_index() == 2 && e.modify_index() == 2)
    );
}

#[test]
fn list_is_sorted_by_name() {
    let mut s = ConfigEntries::new();
    for (i, n) in ["web", "api", "db"].iter().enumerate() {
        put(
            &mut s,
            &json!({"Kind": "service-defaults", "Name": n}),
            i as u64 + 1,
        );
    }
    let names: Vec<&str> = s
        .list(Kind::ServiceDefaults)
        .iter()
        .map(|e| e.name())
        .collect();
    assert_eq!(names, ["api", "db", "web"]);
    assert!(s.list(Kind::ServiceRouter).is_empty());
}

#[test]
fn protocol_and_central_config() {
    let mut s = ConfigEntries::new();
    assert_eq!(s.protocol_of("web"), "tcp");
    put(
        &mut s,
        &json!({"Kind": "proxy-defaults", "Config": {"Protocol": "GRPC", "x": 1}, "MeshGateway": {"Mode": "remote"}}),
        1,
    );
    assert_eq!(
        s.protocol_of("web"),
        "grpc",
        "proxy-defaults Config.protocol, any key case, lowercased"
    );
    put(
        &mut s,
        &json!({"Kind": "service-defaults", "Name": "web"}),
        2,
    );
    assert_eq!(
        s.protocol_of("web"),
        "tcp",
        "an existing service-defaults decides, even with no protocol"
    );
    put(
        &mut s,
        &json!({"Kind": "service-defaults", "Name": "db", "Protocol": "http2", "Mode": "transparent",
                       "Expose": {"Checks": true}}),
        3,
    );
    assert_eq!(s.protocol_of("db"), "http2");

    let cc = s.central_config_for("db");
    assert_eq!(
        cc.proxy_config,
        json!({"Protocol": "GRPC", "x": 1})
            .as_object()
            .unwrap()
            .clone()
    );
    assert_eq!(cc.protocol.as_deref(), Some("http2"));
    assert_eq!(cc.mode.as_deref(), Some("transparent"));
    assert_eq!(cc.mesh_gateway_mode.as_deref(), Some("remote"));
    assert_eq!(cc.expose, Some(json!({"Checks": true})));
    assert_eq!(cc.transparent_proxy, None);
    let web = s.central_config_for("web");
    assert_eq!(
        web.protocol, None,
        "an empty service-defaults protocol is not merged"
    );
    assert_eq!(web.mode, None);
}

#[test]
fn service_defaults_inbound_limits_land_in_the_proxy_config() {
    let mut s = ConfigEntries::default();
    put(
        &mut s,
        &json!({"Kind": "proxy-defaults", "Name": "global",
                "Config": {"max_inbound_connections": 9, "local_connect_timeout_ms": 7}}),
        1,
    );
    put(
        &mut s,
        &json!({"Kind": "service-defaults", "Name": "db", "MaxInboundConnections": 2,
                "LocalRequestTimeoutMs": 300, "BalanceInboundConnections": "exact_balance"}),
        2,
    );
    let cc = s.central_config_for("db");
    assert_eq!(
        Value::Object(cc.proxy_config),
        json!({"max_inbound_connections": 2, "local_connect_timeout_ms": 7,
               "local_request_timeout_ms": 300, "balance_inbound_connections": "exact_balance"}),
        "service-defaults wins over proxy-defaults; zero values are not merged"
    );
}

#[test]
fn decoding_accepts_go_spellings_and_weak_types() {
    let e = decode_entry(
        br#"{"kind":"service-resolver","NAME":"db","connect_timeout":"5s","request_timeout":2000000000,
             "subsets":{"v1":{"only_passing":"true"}},"Meta":{"k":7},"CreateIndex":99}"#,
    )
    .unwrap();
    let ConfigEntry::ServiceResolver(r) = e else {
        panic!("resolver expected")
    };
    assert_eq!(r.name, "db");
    assert_eq!(r.connect_timeout, 5_000_000_000);
    assert_eq!(r.request_timeout, 2_000_000_000);
    assert!(r.subsets["v1"].only_passing);
    assert_eq!(r.meta["k"], "7");
    assert_eq!(r.create_index, 0, "CreateIndex in a body is ignored");
}

#[test]
fn delete_can_break_the_graph() {
    let mut s = ConfigEntries::new();
    put(
        &mut s,
        &json!({"Kind": "service-defaults", "Name": "web", "Protocol": "http"}),
        1,
    );
    put(
        &mut s,
        &json!({"Kind": "service-splitter", "Name": "web", "Splits": [{"Weight": 100}]}),
        2,
    );
    assert_eq!(
        s.delete(Kind::ServiceDefaults, "web", None, 3),
        Err(ConfigError::Invalid(
            "discovery chain \"web\" uses a protocol \"tcp\" that does not permit advanced routing or splitting behavior"
                .into()
        ))
    );
    assert!(
        s.get(Kind::ServiceDefaults, "web").is_some(),
        "a rejected delete changes nothing"
    );
    assert_eq!(s.delete(Kind::ServiceSplitter, "web", None, 3), Ok(true));
    assert_eq!(s.delete(Kind::ServiceDefaults, "web", None, 4), Ok(true));
}
