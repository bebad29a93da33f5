//! Fixtures: endpoint items as agent-sim renders them, and a compact printer for syntax trees.

use serde_json::{Value, json};

use crate::filter::ast::Expr;

/// A `/v1/health/connect/web` entry: a sidecar with metadata, tags, two upstreams, a node-level
/// and a service-level check (shape per reference §7).
pub(super) fn health_entry() -> Value {
    json!({
        "Node": {
            "ID": "40e4a748-2192-161a-0510-9bf59fe950b5", "Node": "n1", "Address": "10.0.0.5",
            "Datacenter": "dc1",
            "TaggedAddresses": {"lan": "10.0.0.5", "lan_ipv4": "10.0.0.5", "wan": "10.0.0.5", "wan_ipv4": "10.0.0.5"},
            "Meta": {"consul-network-segment": "", "consul-version": "1.22.0", "rack": "r1"},
            "CreateIndex": 5, "ModifyIndex": 6
        },
        "Service": {
            "Kind": "connect-proxy", "ID": "web-sidecar-proxy", "Service": "web-sidecar-proxy",
            "Tags": ["v1", "canary"], "Address": "",
            "TaggedAddresses": {"lan_ipv4": {"Address": "10.0.0.5", "Port": 21000}},
            "Meta": {"version": "v1", "team-name": "edge"}, "Port": 21000,
            "Weights": {"Passing": 1, "Warning": 1}, "EnableTagOverride": false,
            "Proxy": {
                "DestinationServiceName": "web", "DestinationServiceID": "web",
                "LocalServiceAddress": "127.0.0.1", "LocalServicePort": 8080, "Mode": "",
                "Config": {"protocol": "http"},
                "Upstreams": [
                    {"DestinationType": "service", "DestinationName": "db", "Datacenter": "", "LocalBindPort": 9191, "MeshGateway": {}},
                    {"DestinationType": "service", "DestinationName": "cache", "Datacenter": "dc2", "LocalBindPort": 9292, "MeshGateway": {}}
                ],
                "MeshGateway": {}, "Expose": {}
            },
            "Connect": {}, "PeerName": "", "CreateIndex": 30, "ModifyIndex": 30
        },
        "Checks": [
            {"Node": "n1", "CheckID": "serfHealth", "Name": "Serf Health Status", "Status": "passing",
             "Notes": "", "Output": "Agent alive and reachable", "ServiceID": "", "ServiceName": "",
             "ServiceTags": [], "Type": "", "Interval": "", "Timeout": "", "ExposedPort": 0,
             "Definition": {}, "CreateIndex": 5, "ModifyIndex": 5},
            {"Node": "n1", "CheckID": "service:web-sidecar-proxy:1", "Name": "Connect Sidecar Listening",
             "Status": "critical", "Notes": "", "Output": "", "ServiceID": "web-sidecar-proxy",
             "ServiceName": "web-sidecar-proxy", "ServiceTags": ["v1", "canary"], "Type": "tcp",
             "Interval": "10s", "Timeout": "", "ExposedPort": 0, "Definition": {},
             "CreateIndex": 30, "ModifyIndex": 30}
        ]
    })
}

/// A typical (non-proxy) service as `/v1/agent/services` renders it: no `Kind`, no `Proxy`.
pub(super) fn agent_typical() -> Value {
    json!({
        "ID": "db", "Service": "db", "Tags": [], "Meta": {"version": "v2"}, "Port": 9090,
        "Address": "", "Weights": {"Passing": 1, "Warning": 1}, "EnableTagOverride": false,
        "Datacenter": "dc1"
    })
}

/// A sidecar as `/v1/agent/services` renders it.
pub(super) fn agent_sidecar() -> Value {
    json!({
        "Kind": "connect-proxy", "ID": "db-sidecar-proxy", "Service": "db-sidecar-proxy",
        "Tags": [], "Meta": {}, "Port": 21000, "Address": "",
        "Weights": {"Passing": 1, "Warning": 1}, "EnableTagOverride": false,
        "Proxy": {"DestinationServiceName": "db", "DestinationServiceID": "db",
                  "LocalServiceAddress": "127.0.0.1", "LocalServicePort": 9090,
                  "MeshGateway": {}, "Expose": {}},
        "Datacenter": "dc1"
    })
}

fn join(terms: &[Expr], sep: &str) -> String {
    terms.iter().map(show).collect::<Vec<_>>().join(sep)
}

/// A tree in one line: `(a and b and c)`, `(a or b)`, `(not a)`, `sel|sub Op "value"`.
pub(super) fn show(e: &Expr) -> String {
    match e {
        Expr::Not(x) => format!("(not {})", show(x)),
        Expr::And(terms) => format!("({})", join(terms, " and ")),
        Expr::Or(terms) => format!("({})", join(terms, " or ")),
        Expr::Match(m) => {
            let sel = m.selector.join("|");
            match &m.value {
                Some(v) => format!("{sel} {} {v:?}", m.op.go_name()),
                None => format!("{sel} {}", m.op.go_name()),
            }
        }
    }
}
