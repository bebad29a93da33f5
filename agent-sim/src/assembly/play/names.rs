//! The names and shapes `play` writes (instance registrations, node and check names), the
//! proxy's ACL rules, and a request-free view of the CA roots for harness verifiers.

use scenarios::InstanceSpec;
use serde_json::{Value, json};

use crate::state::control::Control;

/// The catalog registration of a harness-run instance (`PUT /v1/catalog/register` body).
pub fn instance_registration(spec: &InstanceSpec, address: &str, port: u16) -> Value {
    let service_address = spec.hostname.as_deref().unwrap_or(address);
    let mut body = json!({
        "Node": node_name(&spec.id),
        "Address": address,
        "Service": {
            "Kind": "connect-proxy",
            "ID": spec.id,
            "Service": format!("{}-sidecar-proxy", spec.service),
            "Address": service_address,
            "Port": port,
            "Proxy": {"DestinationServiceName": spec.service, "DestinationServiceID": spec.service},
        },
        "Check": {
            "CheckID": check_id(&spec.id),
            "Name": "instance health",
            "Status": spec.status.as_deref().unwrap_or("passing"),
            "ServiceID": spec.id,
        },
    });
    // `Service.Meta` and `Service.Tags` (what subset filters select on), only when given.
    if !spec.meta.is_empty() {
        body["Service"]["Meta"] = json!(spec.meta);
    }
    if !spec.tags.is_empty() {
        body["Service"]["Tags"] = json!(spec.tags);
    }
    body
}

/// The node an instance is registered on.
pub fn node_name(instance: &str) -> String {
    format!("node-{instance}")
}

/// The ID of an instance's health check.
pub fn check_id(instance: &str) -> String {
    format!("{instance}-health")
}

/// The ACL rules of the token the harness gives the proxy: write on `db` and its sidecar, read
/// on every service, node and agent.
pub const PROXY_TOKEN_RULES: &str = r#"service "db" { policy = "write" }
service "db-sidecar-proxy" { policy = "write" }
service_prefix "" { policy = "read" }
node_prefix "" { policy = "read" }
agent_prefix "" { policy = "read" }
"#;

/// The CA as a verifier needs it: the active root, every listed root, the trust domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootsView {
    /// PEM of the active root.
    pub active_pem: String,
    /// PEMs of every listed root (the active one included).
    pub pems: Vec<String>,
    /// `<cluster-id>.consul`.
    pub trust_domain: String,
    /// The active root's `IntermediateCerts` (what a leaf's `CertPEM` carries after the leaf).
    pub active_intermediates: Vec<String>,
}

/// The roots as `GET /v1/agent/connect/ca/roots` would list them, without a request (so the
/// request log only holds the proxy's requests).
pub fn roots(control: &Control) -> RootsView {
    let body = control.store.read(|st| st.ca.roots_json());
    let roots = body["Roots"].as_array().cloned().unwrap_or_default();
    let pem = |r: &Value| r["RootCert"].as_str().unwrap_or_default().to_owned();
    RootsView {
        active_pem: roots
            .iter()
            .find(|r| r["Active"] == json!(true))
            .map(pem)
            .unwrap_or_default(),
        pems: roots.iter().map(pem).collect(),
        active_intermediates: roots
            .iter()
            .find(|r| r["Active"] == json!(true))
            .and_then(|r| r["IntermediateCerts"].as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
        trust_domain: body["TrustDomain"].as_str().unwrap_or_default().to_owned(),
    }
}
