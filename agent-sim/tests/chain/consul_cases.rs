//! Expected chains transcribed by hand from Consul's own tests
//! (`agent/consul/discoverychain/compile_test.go`, trust domain `trustdomain.consul`, service
//! `main`; and `agent/discovery_chain_endpoint_test.go`), compared as JSON values.

use agent_sim::chain::{ChainRequest, compile, decode_overrides};
use serde_json::{Value, json};

use crate::{entries, protocol, request};

const CONSUL_TD: &str = "trustdomain.consul";

fn chain(list: &[Value], req: &ChainRequest) -> Value {
    let resp = compile(&entries(list), req).unwrap();
    serde_json::to_value(resp).unwrap()["Chain"].clone()
}

/// `newTarget` of compile_test.go, rendered as the wire shape.
fn target(svc: &str, subset: &str, dc: &str, td: &str) -> Value {
    let id = if subset.is_empty() {
        format!("{svc}.default.default.{dc}")
    } else {
        format!("{subset}.{svc}.default.default.{dc}")
    };
    let sni = if subset.is_empty() {
        format!("{svc}.default.{dc}.internal.{td}")
    } else {
        format!("{subset}.{svc}.default.{dc}.internal.{td}")
    };
    let mut t = json!({"ConnectTimeout": "5s", "ID": id, "Service": svc, "Namespace": "default",
        "Partition": "default", "Datacenter": dc, "MeshGateway": {}, "Subset": {},
        "TransparentProxy": {}, "SNI": sni, "Name": sni});
    if !subset.is_empty() {
        t["ServiceSubset"] = json!(subset);
    }
    t
}

fn resolver_node(id: &str) -> Value {
    json!({"Type": "resolver", "Name": id, "Resolver": {"ConnectTimeout": "5s", "Target": id}})
}

fn with_filter(mut t: Value, filter: &str) -> Value {
    t["Subset"] = json!({"Filter": filter});
    t
}

#[test]
fn all_the_bells_and_whistles() {
    let list = [
        protocol("main", "http"),
        protocol("svc-redirect", "http"),
        protocol("svc-redirect-again", "http"),
        protocol("svc-split", "http"),
        protocol("svc-split-again", "http"),
        protocol("svc-split-one-more-time", "http"),
        protocol("redirected", "http"),
        json!({"Kind": "service-router", "Name": "main", "Routes": [
            {"Match": {"HTTP": {"PathPrefix": "/svc-redirect"}}, "Destination": {"Service": "svc-redirect"}},
            {"Match": {"HTTP": {"PathPrefix": "/svc-split"}}, "Destination": {"Service": "svc-split"}}
        ]}),
        json!({"Kind": "service-splitter", "Name": "svc-split", "Splits": [
            {"Weight": 60, "Service": "svc-redirect"}, {"Weight": 40, "Service": "svc-split-again"}
        ]}),
        json!({"Kind": "service-splitter", "Name": "svc-split-again", "Splits": [
            {"Weight": 75, "Service": "main", "ServiceSubset": "v1"},
            {"Weight": 25, "Service": "svc-split-one-more-time",
             "RequestHeaders": {"Set": {"parent": "1", "shared": "from-parent"}},
             "ResponseHeaders": {"Set": {"parent": "2", "shared": "from-parent"}}}
        ]}),
        json!({"Kind": "service-splitter", "Name": "svc-split-one-more-time", "Splits": [
            {"Weight": 80, "Service": "main", "ServiceSubset": "v2"},
            {"Weight": 20, "Service": "main", "ServiceSubset": "v3",
             "RequestHeaders": {"Set": {"child": "3", "shared": "from-child"}},
             "ResponseHeaders": {"Set": {"child": "4", "shared": "from-parent"}}}
        ]}),
        json!({"Kind": "service-resolver", "Name": "svc-redirect", "Redirect": {"Service": "svc-redirect-again"}}),
        json!({"Kind": "service-resolver", "Name": "svc-redirect-again", "Redirect": {"Service": "redirected"}}),
        json!({"Kind": "service-resolver", "Name": "redirected", "DefaultSubset": "prod",
               "Subsets": {"prod": {"Filter": "ServiceMeta.env == prod"}, "qa": {"Filter": "ServiceMeta.env == qa"}},
               "LoadBalancer": {"Policy": "ring_hash", "RingHashConfig": {"MaximumRingSize": 100},
                                "HashPolicies": [{"SourceIP": true}]}}),
        json!({"Kind": "service-resolver", "Name": "main", "DefaultSubset": "default-subset",
               "Subsets": {"v1": {"Filter": "Service.Meta.version == 1"},
                           "v2": {"Filter": "Service.Meta.version == 2"},
                           "v3": {"Filter": "Service.Meta.version == 3"},
                           "default-subset": {"OnlyPassing": true}}}),
    ];
    let lb = json!({"Policy": "ring_hash", "RingHashConfig": {"MaximumRingSize": 100},
                    "HashPolicies": [{"SourceIP": true}]});
    let mut prod = resolver_node("prod.redirected.default.default.dc1");
    prod["LoadBalancer"] = lb.clone();
    let td = CONSUL_TD;
    let mut only_passing = target("main", "default-subset", "dc1", td);
    only_passing["Subset"] = json!({"OnlyPassing": true});
    let want = json!({
        "ServiceName": "main", "Namespace": "default", "Partition": "default", "Datacenter": "dc1",
        "Protocol": "http", "StartNode": "router:main.default.default",
        "Nodes": {
            "router:main.default.default": {"Type": "router", "Name": "main.default.default", "Routes": [
                {"Definition": {"Match": {"HTTP": {"PathPrefix": "/svc-redirect"}}, "Destination": {"Service": "svc-redirect"}},
                 "NextNode": "resolver:prod.redirected.default.default.dc1"},
                {"Definition": {"Match": {"HTTP": {"PathPrefix": "/svc-split"}}, "Destination": {"Service": "svc-split"}},
                 "NextNode": "splitter:svc-split.default.default"},
                {"Definition": {"Match": {"HTTP": {"PathPrefix": "/"}},
                                "Destination": {"Service": "main", "Namespace": "default", "Partition": "default"}},
                 "NextNode": "resolver:default-subset.main.default.default.dc1"}
            ]},
            "splitter:svc-split.default.default": {"Type": "splitter", "Name": "svc-split.default.default", "Splits": [
                {"Definition": {"Weight": 60, "Service": "svc-redirect"}, "Weight": 60,
                 "NextNode": "resolver:prod.redirected.default.default.dc1"},
                {"Definition": {"Weight": 75, "Service": "main", "ServiceSubset": "v1"}, "Weight": 30,
                 "NextNode": "resolver:v1.main.default.default.dc1"},
                {"Definition": {"Weight": 80, "Service": "main", "ServiceSubset": "v2",
                                "RequestHeaders": {"Set": {"parent": "1", "shared": "from-parent"}},
                                "ResponseHeaders": {"Set": {"parent": "2", "shared": "from-parent"}}},
                 "Weight": 8, "NextNode": "resolver:v2.main.default.default.dc1"},
                {"Definition": {"Weight": 20, "Service": "main", "ServiceSubset": "v3",
                                "RequestHeaders": {"Set": {"parent": "1", "child": "3", "shared": "from-child"}},
                                "ResponseHeaders": {"Set": {"parent": "2", "child": "4", "shared": "from-parent"}}},
                 "Weight": 2, "NextNode": "resolver:v3.main.default.default.dc1"}
            ], "LoadBalancer": lb},
            "resolver:prod.redirected.default.default.dc1": prod,
            "resolver:v1.main.default.default.dc1": resolver_node("v1.main.default.default.dc1"),
            "resolver:v2.main.default.default.dc1": resolver_node("v2.main.default.default.dc1"),
            "resolver:v3.main.default.default.dc1": resolver_node("v3.main.default.default.dc1"),
            "resolver:default-subset.main.default.default.dc1": resolver_node("default-subset.main.default.default.dc1")
        },
        "Targets": {
            "prod.redirected.default.default.dc1": with_filter(target("redirected", "prod", "dc1", td), "ServiceMeta.env == prod"),
            "v1.main.default.default.dc1": with_filter(target("main", "v1", "dc1", td), "Service.Meta.version == 1"),
            "v2.main.default.default.dc1": with_filter(target("main", "v2", "dc1", td), "Service.Meta.version == 2"),
            "v3.main.default.default.dc1": with_filter(target("main", "v3", "dc1", td), "Service.Meta.version == 3"),
            "default-subset.main.default.default.dc1": only_passing
        },
        "AutoVirtualIPs": null, "ManualVirtualIPs": null
    });
    assert_eq!(chain(&list, &request("main", td)), want);
}

#[test]
fn multi_datacenter_canary() {
    let list = [
        protocol("main", "http"),
        protocol("main-dc2", "http"),
        protocol("main-dc3", "http"),
        json!({"Kind": "service-splitter", "Name": "main", "Splits": [
            {"Weight": 60, "Service": "main-dc2"}, {"Weight": 40, "Service": "main-dc3"}]}),
        json!({"Kind": "service-resolver", "Name": "main-dc2", "Redirect": {"Service": "main", "Datacenter": "dc2"}}),
        json!({"Kind": "service-resolver", "Name": "main-dc3", "Redirect": {"Service": "main", "Datacenter": "dc3"}}),
        json!({"Kind": "service-resolver", "Name": "main", "ConnectTimeout": "33s"}),
    ];
    let got = chain(&list, &request("main", CONSUL_TD));
    let splits = json!([
        {"Definition": {"Weight": 60, "Service": "main-dc2"}, "Weight": 60, "NextNode": "resolver:main.default.default.dc2"},
        {"Definition": {"Weight": 40, "Service": "main-dc3"}, "Weight": 40, "NextNode": "resolver:main.default.default.dc3"}
    ]);
    assert_eq!(
        got["Nodes"]["splitter:main.default.default"]["Splits"],
        splits
    );
    for dc in ["dc2", "dc3"] {
        let id = format!("main.default.default.{dc}");
        let mut t = target("main", "", dc, CONSUL_TD);
        t["ConnectTimeout"] = json!("33s");
        assert_eq!(got["Targets"][&id], t);
        assert_eq!(
            got["Nodes"][format!("resolver:{id}")]["Resolver"],
            json!({"ConnectTimeout": "33s", "Target": id})
        );
    }
    assert_eq!(got["Targets"].as_object().unwrap().len(), 2);
    assert_eq!(got["Nodes"].as_object().unwrap().len(), 3);
}

#[test]
fn failover_through_redirect_and_circular_failover() {
    let through = [
        json!({"Kind": "service-resolver", "Name": "backup", "Redirect": {"Service": "actual"}}),
        json!({"Kind": "service-resolver", "Name": "main", "Failover": {"*": {"Service": "backup"}}}),
    ];
    let got = chain(&through, &request("main", CONSUL_TD));
    let failover = &got["Nodes"]["resolver:main.default.default.dc1"]["Resolver"]["Failover"];
    assert_eq!(
        *failover,
        json!({"Targets": ["actual.default.default.dc1"]})
    );
    let ids: Vec<&String> = got["Targets"].as_object().unwrap().keys().collect();
    assert_eq!(
        ids,
        ["actual.default.default.dc1", "main.default.default.dc1"]
    );

    let circular = [
        json!({"Kind": "service-resolver", "Name": "backup", "Failover": {"*": {"Service": "main"}}}),
        json!({"Kind": "service-resolver", "Name": "main", "Failover": {"*": {"Service": "backup"}}}),
    ];
    let got = chain(&circular, &request("main", CONSUL_TD));
    let failover = &got["Nodes"]["resolver:main.default.default.dc1"]["Resolver"]["Failover"];
    assert_eq!(
        *failover,
        json!({"Targets": ["backup.default.default.dc1"]})
    );
    assert_eq!(got["Nodes"].as_object().unwrap().len(), 1);
}

#[test]
fn failover_targets_with_mesh_gateways_and_peers() {
    let list = [
        json!({"Kind": "proxy-defaults", "Name": "global", "MeshGateway": {"Mode": "remote"}}),
        json!({"Kind": "service-resolver", "Name": "main", "Failover": {"*": {"Targets": [
            {"Datacenter": "dc3"}, {"Service": "new-main"}, {"Peer": "cluster-01"}
        ]}}}),
    ];
    let got = chain(&list, &request("main", CONSUL_TD));
    let resolver = &got["Nodes"]["resolver:main.default.default.dc1"]["Resolver"];
    let want_targets = json!([
        "main.default.default.dc3",
        "new-main.default.default.dc1",
        "main.default.default.external.cluster-01"
    ]);
    assert_eq!(resolver["Failover"]["Targets"], want_targets);
    let peer = &got["Targets"]["main.default.default.external.cluster-01"];
    assert_eq!(
        *peer,
        json!({"ConnectTimeout": "5s", "ID": "main.default.default.external.cluster-01",
        "Service": "main", "Namespace": "default", "Partition": "default", "Peer": "cluster-01",
        "MeshGateway": {"Mode": "remote"}, "Subset": {}, "TransparentProxy": {}})
    );
    let mut dc3 = target("main", "", "dc3", CONSUL_TD);
    dc3["MeshGateway"] = json!({"Mode": "remote"});
    assert_eq!(got["Targets"]["main.default.default.dc3"], dc3);
}

#[test]
fn defaults_projection_and_default_flag() {
    let extensions = [
        json!({"Kind": "proxy-defaults", "Name": "global", "EnvoyExtensions": [{"Name": "ext1"}],
               "TransparentProxy": {"DialedDirectly": true}}),
        json!({"Kind": "service-defaults", "Name": "main", "EnvoyExtensions": [{"Name": "ext2"}],
               "Meta": {"foo": "bar", "abc": "123"}}),
    ];
    let got = chain(&extensions, &request("main", CONSUL_TD));
    let ext = |name: &str| {
        json!({"Name": name, "Required": false, "Arguments": null,
                                  "ConsulVersion": "", "EnvoyVersion": ""})
    };
    assert_eq!(got["EnvoyExtensions"], json!([ext("ext1"), ext("ext2")]));
    assert_eq!(got["ServiceMeta"], json!({"abc": "123", "foo": "bar"}));
    assert_eq!(got["Default"], json!(true));
    let dialed = &got["Targets"]["main.default.default.dc1"]["TransparentProxy"];
    assert_eq!(*dialed, json!({"DialedDirectly": true}));

    // Redirecting to a service that itself has the default resolver is not a default chain.
    let redirect =
        [json!({"Kind": "service-resolver", "Name": "main", "Redirect": {"Service": "other"}})];
    let got = chain(&redirect, &request("main", CONSUL_TD));
    assert!(got.get("Default").is_none(), "{got}");
    assert_eq!(got["StartNode"], "resolver:other.default.default.dc1");
    assert_eq!(
        got["Nodes"]["resolver:other.default.default.dc1"]["Resolver"]["Default"],
        true
    );
}

#[test]
fn external_sni_and_protocol_from_proxy_defaults() {
    let list = [
        json!({"Kind": "proxy-defaults", "Name": "global", "Config": {"protocol": "grpc"},
               "MeshGateway": {"Mode": "remote"}}),
        json!({"Kind": "service-defaults", "Name": "main", "ExternalSNI": "main.some.other.service.mesh"}),
    ];
    let got = chain(&list, &request("main", CONSUL_TD));
    let mut want = target("main", "", "dc1", CONSUL_TD);
    want["SNI"] = json!("main.some.other.service.mesh");
    want["External"] = json!(true);
    assert_eq!(got["Targets"]["main.default.default.dc1"], want);
    // service-defaults exists without a protocol, so proxy-defaults' grpc does not apply.
    assert_eq!(got["Protocol"], "tcp");
}

#[test]
fn endpoint_overrides_vector() {
    // discovery_chain_endpoint_test.go "read modified chain with overrides", both key styles.
    let list = [
        json!({"Kind": "service-resolver", "Name": "web", "ConnectTimeout": "33s",
                       "Failover": {"*": {"Datacenters": ["dc2"]}}}),
    ];
    let td = "11111111-2222-3333-4444-555555555555.consul";
    let target_for = |dc: &str| {
        let mut t = target("web", "", dc, td);
        t["ConnectTimeout"] = json!("22s");
        t["MeshGateway"] = json!({"Mode": "local"});
        t
    };
    let want = json!({
        "ServiceName": "web", "Namespace": "default", "Partition": "default", "Datacenter": "dc1",
        "CustomizationHash": "98809527", "Protocol": "grpc",
        "StartNode": "resolver:web.default.default.dc1",
        "Nodes": {"resolver:web.default.default.dc1": {"Type": "resolver", "Name": "web.default.default.dc1",
            "Resolver": {"ConnectTimeout": "22s", "Target": "web.default.default.dc1",
                         "Failover": {"Targets": ["web.default.default.dc2"]}}}},
        "Targets": {"web.default.default.dc1": target_for("dc1"), "web.default.default.dc2": target_for("dc2")},
        "AutoVirtualIPs": ["240.0.0.1"], "ManualVirtualIPs": []
    });
    let bodies = [
        r#"{"OverrideMeshGateway": {"Mode": "local"}, "OverrideProtocol": "grpc", "OverrideConnectTimeout": "22s"}"#,
        r#"{"override_mesh_gateway": {"mode": "local"}, "override_protocol": "grpc", "override_connect_timeout": "22s"}"#,
    ];
    for body in bodies {
        let overrides = decode_overrides(body.as_bytes()).unwrap();
        let mut req = request("web", td).with_overrides(overrides);
        req.virtual_ips = Some((vec!["240.0.0.1".to_owned()], Vec::new()));
        assert_eq!(chain(&list, &req), want, "{body}");
    }
}
