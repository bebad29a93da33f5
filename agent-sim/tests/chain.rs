//! Discovery-chain compiler: insta snapshots of the wire body for the main shapes of chain, the
//! exact bytes of the reference's default chain, and (in `chain/`) expectations transcribed from
//! Consul's own compiler and endpoint tests plus the error tables.

mod chain {
    pub(crate) mod consul_cases;
    pub(crate) mod errors;
}

use agent_sim::chain::{ChainEntries, ChainRequest, ChainResponse, compile};
use agent_sim::duration::GoDuration;
use serde_json::{Value, json};

/// The cluster ID of the reference's examples.
pub(crate) const TD: &str = "7e567ac2-551d-463f-8497-f78972856fc1.consul";

pub(crate) fn request(service: &str, trust_domain: &str) -> ChainRequest {
    ChainRequest {
        service: service.to_owned(),
        datacenter: "dc1".to_owned(),
        trust_domain: trust_domain.to_owned(),
        ..ChainRequest::default()
    }
}

/// Sorts read-shape entries (with `Kind` and `Name`) into the compiler's input maps.
pub(crate) fn entries(list: &[Value]) -> ChainEntries {
    let mut out = ChainEntries::default();
    for entry in list {
        let name = entry["Name"].as_str().unwrap_or_default().to_owned();
        let map = match entry["Kind"].as_str().unwrap_or_default() {
            "service-defaults" => &mut out.service_defaults,
            "service-resolver" => &mut out.resolvers,
            "service-splitter" => &mut out.splitters,
            "service-router" => &mut out.routers,
            "proxy-defaults" => {
                out.proxy_defaults = Some(entry.clone());
                continue;
            }
            other => panic!("unexpected kind {other}"),
        };
        map.insert(name, entry.clone());
    }
    out
}

pub(crate) fn protocol(service: &str, protocol: &str) -> Value {
    json!({"Kind": "service-defaults", "Name": service, "Protocol": protocol})
}

fn compiled(list: &[Value], req: &ChainRequest) -> ChainResponse {
    compile(&entries(list), req).unwrap()
}

#[test]
fn default_chain_is_byte_exact() {
    let resp = compiled(&[], &request("db", TD));
    let sni = format!("db.default.dc1.internal.{TD}");
    let want = format!(
        concat!(
            r#"{{"Chain":{{"ServiceName":"db","Namespace":"default","Partition":"default","#,
            r#""Datacenter":"dc1","Default":true,"Protocol":"tcp","#,
            r#""StartNode":"resolver:db.default.default.dc1","#,
            r#""Nodes":{{"resolver:db.default.default.dc1":{{"Type":"resolver","#,
            r#""Name":"db.default.default.dc1","Resolver":{{"ConnectTimeout":"5s","Default":true,"#,
            r#""Target":"db.default.default.dc1"}}}}}},"#,
            r#""Targets":{{"db.default.default.dc1":{{"ConnectTimeout":"5s","#,
            r#""ID":"db.default.default.dc1","Service":"db","Namespace":"default","#,
            r#""Partition":"default","Datacenter":"dc1","MeshGateway":{{}},"Subset":{{}},"#,
            r#""TransparentProxy":{{}},"SNI":"{sni}","Name":"{sni}"}}}},"#,
            r#""AutoVirtualIPs":null,"ManualVirtualIPs":null}}}}"#
        ),
        sni = sni
    );
    assert_eq!(String::from_utf8(resp.to_json()).unwrap(), want);
    insta::assert_json_snapshot!("default_chain", resp);
}

#[test]
fn virtual_ips_are_arrays_once_assigned() {
    let mut req = request("db", TD);
    req.virtual_ips = Some((vec!["240.0.0.1".to_owned()], vec![]));
    let body = serde_json::to_value(compiled(&[], &req)).unwrap();
    assert_eq!(body["Chain"]["AutoVirtualIPs"], json!(["240.0.0.1"]));
    assert_eq!(body["Chain"]["ManualVirtualIPs"], json!([]));
}

#[test]
fn http_from_service_defaults() {
    let resp = compiled(&[protocol("web", "http")], &request("web", TD));
    insta::assert_json_snapshot!("http_from_service_defaults", resp);
}

#[test]
fn override_tcp_drops_router() {
    let list = [
        protocol("web", "http"),
        protocol("admin", "http"),
        json!({"Kind": "service-router", "Name": "web", "Routes": [
            {"Match": {"HTTP": {"PathPrefix": "/admin"}}, "Destination": {"Service": "admin"}}
        ]}),
    ];
    let mut req = request("web", TD);
    req.override_protocol = Some("tcp".to_owned());
    let resp = compiled(&list, &req);
    insta::assert_json_snapshot!("override_tcp_drops_router", resp);
}

#[test]
fn resolver_timeouts_and_subsets() {
    let list = [json!({
        "Kind": "service-resolver", "Name": "db",
        "ConnectTimeout": "15s", "RequestTimeout": "1m30s",
        "DefaultSubset": "v1",
        "Subsets": {
            "v1": {"Filter": "Service.Meta.version == v1", "OnlyPassing": true},
            "v2": {"Filter": "Service.Meta.version == v2"}
        },
        "LoadBalancer": {"Policy": "least_request", "LeastRequestConfig": {"ChoiceCount": 3}}
    })];
    let resp = compiled(&list, &request("db", TD));
    insta::assert_json_snapshot!("resolver_timeouts_and_subsets", resp);
}

#[test]
fn redirect_chain_to_subset() {
    let list = [
        json!({"Kind": "service-resolver", "Name": "web", "Redirect": {"Service": "api"}}),
        json!({"Kind": "service-resolver", "Name": "api",
               "Redirect": {"Service": "api-v2", "ServiceSubset": "canary"}}),
        json!({"Kind": "service-resolver", "Name": "api-v2", "ConnectTimeout": "2s",
               "Subsets": {"canary": {"Filter": "Service.Meta.canary == true"}}}),
    ];
    let resp = compiled(&list, &request("web", TD));
    insta::assert_json_snapshot!("redirect_chain_to_subset", resp);
}

#[test]
fn failover_to_service() {
    let list = [json!({
        "Kind": "service-resolver", "Name": "db", "ConnectTimeout": "3s",
        "Failover": {"*": {"Service": "db-backup"}}
    })];
    let resp = compiled(&list, &request("db", TD));
    insta::assert_json_snapshot!("failover_to_service", resp);
}

#[test]
fn failover_for_subset_wins_over_wildcard() {
    let list = [
        json!({"Kind": "proxy-defaults", "Name": "global", "MeshGateway": {"Mode": "local"}}),
        json!({
            "Kind": "service-resolver", "Name": "db", "DefaultSubset": "primary",
            "Subsets": {
                "primary": {"Filter": "Service.Meta.role == primary"},
                "backup": {"Filter": "Service.Meta.role == backup", "OnlyPassing": true}
            },
            "Failover": {
                "primary": {"ServiceSubset": "backup", "Policy": {"Mode": "sequential"}},
                "*": {"Targets": [{"Datacenter": "dc2"}, {"Service": "db-archive"}]}
            }
        }),
    ];
    let resp = compiled(&list, &request("db", TD));
    insta::assert_json_snapshot!("failover_to_subset", resp);
}

#[test]
fn splitter_with_subsets() {
    let list = [
        protocol("web", "http"),
        json!({"Kind": "service-splitter", "Name": "web", "Splits": [
            {"Weight": 90, "ServiceSubset": "v1"},
            {"Weight": 10, "ServiceSubset": "v2",
             "RequestHeaders": {"Set": {"x-canary": "1"}, "Remove": ["x-debug"]}}
        ]}),
        json!({"Kind": "service-resolver", "Name": "web", "Subsets": {
            "v1": {"Filter": "Service.Meta.version == 1"},
            "v2": {"Filter": "Service.Meta.version == 2"}
        }}),
    ];
    let resp = compiled(&list, &request("web", TD));
    insta::assert_json_snapshot!("splitter_with_subsets", resp);
}

#[test]
fn adjacent_splitters_are_flattened() {
    let list = [
        json!({"Kind": "proxy-defaults", "Name": "global", "Config": {"protocol": "http"}}),
        json!({"Kind": "service-splitter", "Name": "web", "Splits": [
            {"Weight": 66.67, "ServiceSubset": "v1"},
            {"Weight": 33.33, "Service": "web-canary"}
        ]}),
        json!({"Kind": "service-splitter", "Name": "web-canary", "Splits": [
            {"Weight": 50, "Service": "web", "ServiceSubset": "v2"},
            {"Weight": 50, "Service": "web", "ServiceSubset": "v3",
             "ResponseHeaders": {"Add": {"x-variant": "v3"}}}
        ]}),
        json!({"Kind": "service-resolver", "Name": "web", "Subsets": {
            "v1": {"Filter": "Service.Meta.version == 1"},
            "v2": {"Filter": "Service.Meta.version == 2"},
            "v3": {"Filter": "Service.Meta.version == 3"}
        }}),
    ];
    let resp = compiled(&list, &request("web", TD));
    insta::assert_json_snapshot!("adjacent_splitters_are_flattened", resp);
}

#[test]
fn router_with_catch_all() {
    let list = [
        protocol("web", "http"),
        protocol("admin", "http"),
        json!({"Kind": "service-router", "Name": "web", "Routes": [
            {"Match": {"HTTP": {"PathPrefix": "/admin", "Methods": ["GET", "POST"],
                                "Header": [{"Name": "x-debug", "Present": true}]}},
             "Destination": {"Service": "admin", "PrefixRewrite": "/", "RequestTimeout": "5s",
                             "NumRetries": 2, "RetryOnStatusCodes": [503]}},
            {"Match": {"HTTP": {"PathExact": "/v2"}}, "Destination": {"ServiceSubset": "v2"}},
            {"Match": {"HTTP": {"QueryParam": [{"Name": "beta", "Exact": "1"}]}}}
        ]}),
        json!({"Kind": "service-resolver", "Name": "web", "Subsets": {
            "v2": {"Filter": "Service.Meta.version == 2"}
        }}),
    ];
    let resp = compiled(&list, &request("web", TD));
    insta::assert_json_snapshot!("router_with_catch_all", resp);
}

#[test]
fn overrides_that_change_nothing_leave_no_hash() {
    let mut req = request("db", TD);
    req.override_protocol = Some("tcp".to_owned());
    req.override_connect_timeout = Some(GoDuration(5_000_000_000));
    req.override_mesh_gateway_mode = Some(String::new());
    let body = serde_json::to_value(compiled(&[], &req)).unwrap();
    assert!(body["Chain"].get("CustomizationHash").is_none(), "{body}");
    req.override_connect_timeout = Some(GoDuration(7_000_000_000));
    let body = serde_json::to_value(compiled(&[], &req)).unwrap();
    let hash = body["Chain"]["CustomizationHash"].as_str().unwrap();
    assert_eq!(hash.len(), 8);
    assert!(hash.chars().all(|c| c.is_ascii_hexdigit()), "{hash}");
    assert_eq!(
        body["Chain"]["Nodes"]["resolver:db.default.default.dc1"]["Resolver"]["ConnectTimeout"],
        "7s"
    );
}
