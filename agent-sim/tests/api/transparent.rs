//! Transparent-proxy registrations, unix-socket paths and hostname addresses round-trip from
//! `PUT /v1/agent/service/register` to the agent's view and the catalog's health entries, with
//! Consul's key order and omission rules (reference §7, §8, §9).

use serde_json::{Value, json};

use super::support::{App, app, builder};

/// The compact JSON text of `v` (keys in the order the sim wrote them).
fn text(v: &Value) -> String {
    serde_json::to_string(v).unwrap()
}

async fn register(a: &App, body: Value) {
    let r = a.put("/v1/agent/service/register", &body.to_string()).await;
    assert_eq!((r.status, r.text.as_str()), (200, ""), "register {body}");
}

/// The only health-connect entry for `service`.
async fn connect_entry(a: &App, service: &str) -> Value {
    let r = a.get(&format!("/v1/health/connect/{service}")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let all = r.json();
    let list = all.as_array().unwrap();
    assert_eq!(list.len(), 1, "{all}");
    list[0].clone()
}

async fn transparent_web() -> App {
    let a = app(builder());
    register(
        &a,
        json!({"Name": "web", "Port": 8080, "Connect": {"SidecarService": {"Proxy": {
            "Mode": "transparent",
            "TransparentProxy": {"OutboundListenerPort": 15001, "DialedDirectly": true},
            "Upstreams": [{"DestinationName": "db", "LocalBindSocketPath": "/tmp/db.sock",
                           "LocalBindSocketMode": "0600"}]}}}}),
    )
    .await;
    a
}

#[tokio::test]
async fn transparent_sidecar_in_agent_view() {
    let a = transparent_web().await;
    let r = a.get("/v1/agent/service/web-sidecar-proxy").await;
    assert_eq!(r.status, 200, "{}", r.text);
    // api form: Mode before TransparentProxy, upstreams without Datacenter.
    assert_eq!(
        text(&r.json()["Proxy"]),
        concat!(
            r#"{"DestinationServiceName":"web","DestinationServiceID":"web","#,
            r#""LocalServiceAddress":"127.0.0.1","LocalServicePort":8080,"Mode":"transparent","#,
            r#""TransparentProxy":{"OutboundListenerPort":15001,"DialedDirectly":true},"#,
            r#""Upstreams":[{"DestinationType":"service","DestinationName":"db","#,
            r#""LocalBindSocketPath":"/tmp/db.sock","LocalBindSocketMode":"0600","MeshGateway":{}}],"#,
            r#""MeshGateway":{},"Expose":{}}"#
        )
    );
}

#[tokio::test]
async fn transparent_sidecar_in_health_connect() {
    let a = transparent_web().await;
    let e = connect_entry(&a, "web").await;
    assert_eq!(e["Service"]["ID"], "web-sidecar-proxy");
    // catalog form: TransparentProxy first, Mode always, upstreams with Datacenter "".
    assert_eq!(
        text(&e["Service"]["Proxy"]),
        concat!(
            r#"{"TransparentProxy":{"OutboundListenerPort":15001,"DialedDirectly":true},"#,
            r#""DestinationServiceName":"web","DestinationServiceID":"web","#,
            r#""LocalServiceAddress":"127.0.0.1","LocalServicePort":8080,"Mode":"transparent","#,
            r#""Upstreams":[{"DestinationType":"service","DestinationName":"db","Datacenter":"","#,
            r#""LocalBindSocketPath":"/tmp/db.sock","LocalBindSocketMode":"0600","MeshGateway":{}}],"#,
            r#""MeshGateway":{},"Expose":{}}"#
        )
    );
}

#[tokio::test]
async fn zero_transparent_proxy_block_is_omitted() {
    let a = app(builder());
    register(
        &a,
        json!({"Name": "web", "Port": 8080, "Connect": {"SidecarService": {"Proxy": {
            "Mode": "transparent", "TransparentProxy": {}}}}}),
    )
    .await;
    let agent = a.get("/v1/agent/service/web-sidecar-proxy").await.json();
    assert_eq!(agent["Proxy"]["Mode"], "transparent");
    assert!(agent["Proxy"].get("TransparentProxy").is_none(), "{agent}");
    let e = connect_entry(&a, "web").await;
    assert!(
        e["Service"]["Proxy"].get("TransparentProxy").is_none(),
        "{e}"
    );
}

#[tokio::test]
async fn socket_parent_gives_sidecar_local_service_socket_path() {
    let a = app(builder());
    register(
        &a,
        json!({"Name": "api", "SocketPath": "/run/api.sock", "Connect": {"SidecarService": {}}}),
    )
    .await;
    let parent = a.get("/v1/agent/service/api").await.json();
    assert_eq!(parent["SocketPath"], "/run/api.sock");
    assert_eq!(parent["Port"], 0);
    let sidecar = a.get("/v1/agent/service/api-sidecar-proxy").await.json();
    // No LocalServiceAddress/Port when the parent listens on a socket; Mode omitted when empty.
    assert_eq!(
        text(&sidecar["Proxy"]),
        concat!(
            r#"{"DestinationServiceName":"api","DestinationServiceID":"api","#,
            r#""LocalServiceSocketPath":"/run/api.sock","MeshGateway":{},"Expose":{}}"#
        )
    );
    let e = connect_entry(&a, "api").await;
    assert_eq!(
        text(&e["Service"]["Proxy"]),
        concat!(
            r#"{"DestinationServiceName":"api","DestinationServiceID":"api","#,
            r#""LocalServiceSocketPath":"/run/api.sock","Mode":"","MeshGateway":{},"Expose":{}}"#
        )
    );
    let by_service = a.get("/v1/health/service/api").await.json();
    assert_eq!(by_service[0]["Service"]["SocketPath"], "/run/api.sock");
}

#[tokio::test]
async fn hostname_address_is_kept_without_ipv4_tagged_addresses() {
    let a = app(builder());
    register(
        &a,
        json!({"Name": "cache", "Address": "cache.service.internal", "Port": 6379,
               "Connect": {"SidecarService": {}}}),
    )
    .await;
    let agent = a.get("/v1/agent/service/cache").await.json();
    assert_eq!(agent["Address"], "cache.service.internal");
    assert!(agent.get("TaggedAddresses").is_none(), "{agent}");
    let sidecar = a.get("/v1/agent/service/cache-sidecar-proxy").await.json();
    assert_eq!(sidecar["Address"], "cache.service.internal", "inherited");
    assert!(sidecar.get("TaggedAddresses").is_none(), "{sidecar}");
    let plain = a.get("/v1/health/service/cache").await.json();
    assert_eq!(plain[0]["Service"]["Address"], "cache.service.internal");
    assert!(
        plain[0]["Service"].get("TaggedAddresses").is_none(),
        "{plain}"
    );
    let e = connect_entry(&a, "cache").await;
    assert_eq!(e["Service"]["Address"], "cache.service.internal");
}

#[tokio::test]
async fn ipv4_address_gets_lan_and_wan_tagged_addresses() {
    // The contrast to the hostname case: an IPv4 literal is auto-tagged.
    let a = app(builder());
    register(
        &a,
        json!({"Name": "cache", "Address": "127.0.0.9", "Port": 6379}),
    )
    .await;
    let agent = a.get("/v1/agent/service/cache").await.json();
    assert_eq!(
        agent["TaggedAddresses"],
        json!({"lan_ipv4": {"Address": "127.0.0.9", "Port": 6379},
               "wan_ipv4": {"Address": "127.0.0.9", "Port": 6379}})
    );
}

#[tokio::test]
async fn catalog_registered_hostname_proxy_in_health_connect() {
    let a = app(builder());
    a.control
        .catalog_register(
            &json!({"Node": "n2", "Address": "node2.internal", "Service": {
            "Kind": "connect-proxy", "ID": "db-proxy", "Service": "db-sidecar-proxy",
            "Address": "db.pod.internal", "Port": 21000,
            "Proxy": {"DestinationServiceName": "db", "Mode": "transparent",
                      "TransparentProxy": {"OutboundListenerPort": 15001}}}}),
        )
        .unwrap();
    let e = connect_entry(&a, "db").await;
    assert_eq!(e["Node"]["Address"], "node2.internal");
    assert_eq!(e["Service"]["Address"], "db.pod.internal");
    assert_eq!(e["Service"]["Proxy"]["Mode"], "transparent");
    assert_eq!(
        e["Service"]["Proxy"]["TransparentProxy"],
        json!({"OutboundListenerPort": 15001})
    );
}

// === virtual IPs ===

#[tokio::test]
async fn proxy_entry_carries_destination_virtual_ip_with_its_own_port() {
    let a = transparent_web().await;
    assert_eq!(
        a.control.virtual_ip("web"),
        Some("240.0.0.1".parse().unwrap())
    );
    assert_eq!(a.control.virtual_ip("web-sidecar-proxy"), None);
    assert_eq!(
        a.control.virtual_ip("db"),
        None,
        "an upstream alone gets none"
    );
    let e = connect_entry(&a, "web").await;
    let port = e["Service"]["Port"].as_u64().unwrap();
    assert!(port >= 21000, "{e}");
    assert_eq!(
        e["Service"]["TaggedAddresses"],
        json!({"consul-virtual": {"Address": "240.0.0.1", "Port": port}})
    );
    // The plain instance is not connect-enabled by itself: no virtual address on it.
    let plain = a.get("/v1/health/service/web").await.json();
    assert!(
        plain[0]["Service"].get("TaggedAddresses").is_none(),
        "{plain}"
    );
    // The agent's local view never shows it.
    let agent = a.get("/v1/agent/service/web-sidecar-proxy").await.json();
    assert!(agent.get("TaggedAddresses").is_none(), "{agent}");
    // The catalog shows it too.
    let cat = a.get("/v1/catalog/service/web-sidecar-proxy").await.json();
    assert_eq!(
        cat[0]["ServiceTaggedAddresses"]["consul-virtual"],
        json!({"Address": "240.0.0.1", "Port": port})
    );
}

#[tokio::test]
async fn virtual_ips_count_up_and_survive_reregistration_and_index_reset() {
    let a = app(builder());
    for (name, port) in [("web", 8080), ("cache", 6379)] {
        register(
            &a,
            json!({"Name": name, "Port": port, "Connect": {"SidecarService": {}}}),
        )
        .await;
    }
    register(
        &a,
        json!({"Name": "native", "Port": 7000, "Connect": {"Native": true}}),
    )
    .await;
    let ip = |s: &str| a.control.virtual_ip(s).map(|i| i.to_string());
    assert_eq!(ip("web").as_deref(), Some("240.0.0.1"));
    assert_eq!(ip("cache").as_deref(), Some("240.0.0.2"));
    assert_eq!(ip("native").as_deref(), Some("240.0.0.3"));
    let native = connect_entry(&a, "native").await;
    assert_eq!(
        native["Service"]["TaggedAddresses"]["consul-virtual"],
        json!({"Address": "240.0.0.3", "Port": 7000})
    );
    a.control.deregister("web").unwrap();
    register(
        &a,
        json!({"Name": "web", "Port": 8080, "Connect": {"SidecarService": {}}}),
    )
    .await;
    a.control.reset_indexes();
    register(
        &a,
        json!({"Name": "late", "Port": 1, "Connect": {"SidecarService": {}}}),
    )
    .await;
    assert_eq!(ip("web").as_deref(), Some("240.0.0.1"));
    assert_eq!(ip("late").as_deref(), Some("240.0.0.4"));
    let e = connect_entry(&a, "web").await;
    assert_eq!(
        e["Service"]["TaggedAddresses"]["consul-virtual"]["Address"],
        "240.0.0.1"
    );
}

#[tokio::test]
async fn hostname_proxy_shows_only_the_virtual_tagged_address() {
    let a = app(builder());
    register(
        &a,
        json!({"Name": "cache", "Address": "cache.service.internal", "Port": 6379,
               "Connect": {"SidecarService": {"Port": 21000}}}),
    )
    .await;
    let e = connect_entry(&a, "cache").await;
    assert_eq!(
        e["Service"]["TaggedAddresses"],
        json!({"consul-virtual": {"Address": "240.0.0.1", "Port": 21000}})
    );
}

#[tokio::test]
async fn discovery_chain_lists_the_auto_virtual_ip() {
    let a = app(builder());
    let before = a.get("/v1/discovery-chain/web").await.json();
    assert_eq!(before["Chain"]["AutoVirtualIPs"], Value::Null);
    assert_eq!(before["Chain"]["ManualVirtualIPs"], Value::Null);
    register(
        &a,
        json!({"Name": "web", "Port": 8080, "Connect": {"SidecarService": {}}}),
    )
    .await;
    let after = a.get("/v1/discovery-chain/web").await.json();
    assert_eq!(after["Chain"]["AutoVirtualIPs"], json!(["240.0.0.1"]));
    assert_eq!(after["Chain"]["ManualVirtualIPs"], json!([]));
    let keys: Vec<&String> = after["Chain"].as_object().unwrap().keys().collect();
    assert_eq!(
        keys[keys.len() - 2..],
        [&"AutoVirtualIPs".to_owned(), &"ManualVirtualIPs".to_owned()]
    );
}

#[tokio::test]
async fn resolver_router_and_splitter_entries_assign_virtual_ips_defaults_do_not() {
    let a = app(builder());
    let c = &a.control;
    c.upsert_config_entry(&json!({"Kind": "service-defaults", "Name": "api", "Protocol": "http"}))
        .unwrap();
    c.upsert_config_entry(&json!({"Kind": "service-intentions", "Name": "api",
        "Sources": [{"Name": "web", "Action": "allow"}]}))
        .unwrap();
    assert_eq!(c.virtual_ip("api"), None);
    c.upsert_config_entry(&json!({"Kind": "service-resolver", "Name": "api"}))
        .unwrap();
    c.upsert_config_entry(&json!({"Kind": "service-router", "Name": "api"}))
        .unwrap();
    c.upsert_config_entry(&json!({"Kind": "service-defaults", "Name": "pay", "Protocol": "http"}))
        .unwrap();
    c.upsert_config_entry(&json!({"Kind": "service-splitter", "Name": "pay",
        "Splits": [{"Weight": 100}]}))
        .unwrap();
    assert_eq!(c.virtual_ip("api"), Some("240.0.0.1".parse().unwrap()));
    assert_eq!(c.virtual_ip("pay"), Some("240.0.0.2".parse().unwrap()));
    let r = a
        .put(
            "/v1/config",
            &json!({"Kind": "service-resolver", "Name": "db"}).to_string(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(c.virtual_ip("db"), Some("240.0.0.3".parse().unwrap()));
    let chain = a.get("/v1/discovery-chain/api").await.json();
    assert_eq!(chain["Chain"]["AutoVirtualIPs"], json!(["240.0.0.1"]));
}

#[tokio::test]
async fn merged_central_config_entries_keep_the_virtual_tagged_address() {
    let a = app(builder());
    a.control
        .upsert_config_entry(&json!({"Kind": "proxy-defaults", "Name": "global",
            "Mode": "transparent", "TransparentProxy": {"OutboundListenerPort": 15001}}))
        .unwrap();
    register(
        &a,
        json!({"Name": "web", "Port": 8080, "Connect": {"SidecarService": {"Port": 21000}}}),
    )
    .await;
    let r = a.get("/v1/health/connect/web?merge-central-config").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let e = &r.json()[0];
    assert_eq!(e["Service"]["Proxy"]["Mode"], "transparent", "{e}");
    assert_eq!(
        e["Service"]["TaggedAddresses"],
        json!({"consul-virtual": {"Address": "240.0.0.1", "Port": 21000}})
    );
}
