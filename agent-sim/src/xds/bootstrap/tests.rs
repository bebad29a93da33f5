//! The bootstrap JSON against Consul's golden shape (snapshot), its edge cases, and Envoy 1.40
//! accepting it (`envoy --mode validate`).

use std::net::SocketAddr;
use std::process::Command;

use super::*;

fn addr(s: &str) -> SocketAddr {
    s.parse().expect("test address")
}

/// The parameters of Consul's `token-file-env-dualstack.golden`, so the snapshot can be read
/// side by side with it.
fn golden_params() -> BootstrapParams {
    BootstrapParams {
        proxy_id: "test-proxy".into(),
        cluster: "test".into(),
        namespace: "default".into(),
        partition: "default".into(),
        datacenter: "dc1".into(),
        grpc_addr: addr("[::1]:8502"),
        token: Some("c9a52720-bf6c-4aa6-b8bc-66881a5ade95".into()),
        admin_bind: addr("[::1]:19000"),
    }
}

#[test]
fn matches_consuls_golden_shape() {
    insta::assert_json_snapshot!(render(&golden_params()));
}

#[test]
fn keys_in_consuls_order() {
    let v = render(&golden_params());
    let keys: Vec<&str> = v
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "admin",
            "node",
            "layered_runtime",
            "static_resources",
            "stats_config",
            "dynamic_resources"
        ]
    );
}

#[test]
fn identity_and_agent_address_come_from_the_params() {
    let p = BootstrapParams {
        proxy_id: "web-sidecar-proxy".into(),
        cluster: "web".into(),
        namespace: String::new(),
        partition: String::new(),
        datacenter: String::new(),
        grpc_addr: addr("127.0.0.1:40123"),
        token: None,
        admin_bind: addr("127.0.0.1:19001"),
    };
    let v = render(&p);
    assert_eq!(v["node"]["id"], "web-sidecar-proxy");
    assert_eq!(v["node"]["cluster"], "web");
    assert_eq!(v["node"]["metadata"]["namespace"], "default");
    assert_eq!(v["node"]["metadata"]["partition"], "default");
    let ep = &v["static_resources"]["clusters"][0]["loadAssignment"]["endpoints"][0]["lbEndpoints"]
        [0]["endpoint"]["address"]["socket_address"];
    assert_eq!(ep["address"], "127.0.0.1");
    assert_eq!(ep["port_value"], 40123);
    assert_eq!(v["admin"]["address"]["socket_address"]["port_value"], 19001);
    // No token: Consul still writes the entry, with an empty value (defaults.golden).
    let md = &v["dynamic_resources"]["ads_config"]["grpc_services"]["initial_metadata"];
    assert_eq!(md, &json!([{"key": "x-consul-token", "value": ""}]));
    // No datacenter: no consul.source.datacenter tag (Consul skips empty values).
    let tags = v["stats_config"]["stats_tags"].as_array().expect("tags");
    assert!(
        !tags
            .iter()
            .any(|t| t["tag_name"] == "consul.source.datacenter"),
        "{tags:?}"
    );
    assert!(
        tags.iter()
            .any(|t| t["tag_name"] == "local_cluster" && t["fixed_value"] == "web")
    );
}

#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn envoy_accepts_it() {
    let envoy = crate::xds::test_envoy::envoy("envoy_accepts_it");
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, p) in [
        ("golden.json", golden_params()),
        (
            "no-token.json",
            BootstrapParams {
                token: None,
                datacenter: String::new(),
                grpc_addr: addr("127.0.0.1:8502"),
                admin_bind: addr("127.0.0.1:0"),
                ..golden_params()
            },
        ),
    ] {
        let path = dir.path().join(name);
        let text = serde_json::to_string_pretty(&render(&p)).expect("json");
        std::fs::write(&path, text).expect("write bootstrap");
        let out = Command::new(&envoy)
            .args(["--mode", "validate", "-c"])
            .arg(&path)
            .args(["--log-level", "warn"])
            .output()
            .expect("envoy runs");
        assert!(
            out.status.success(),
            "envoy rejected {name}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
