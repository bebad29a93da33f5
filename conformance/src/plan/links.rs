//! Where a scenario is defined and which Consul documentation defines what it tests: the
//! catalogue file of a built-in scenario (its path in the repository) and Consul's pages for the
//! features it needs. Pure; the CLI turns the path into a link from the report's directory.

use scenarios::catalogue_files;

/// Consul's page for integrating a proxy (what every scenario holds a proxy to).
pub const CUSTOM_PROXY_DOC: &str =
    "https://developer.hashicorp.com/consul/docs/connect/proxy/custom";

/// Consul's pages for each feature a scenario can need.
const FEATURE_DOCS: &[(&str, &str)] = &[
    (
        "l4",
        "https://developer.hashicorp.com/consul/docs/connect/intentions",
    ),
    (
        "l7-http",
        "https://developer.hashicorp.com/consul/docs/connect/intentions",
    ),
    (
        "l7-http2",
        "https://developer.hashicorp.com/consul/docs/connect/intentions",
    ),
    (
        "l7-grpc",
        "https://developer.hashicorp.com/consul/docs/connect/intentions",
    ),
    (
        "ca-rotation",
        "https://developer.hashicorp.com/consul/docs/connect/ca",
    ),
    (
        "leaf-renewal",
        "https://developer.hashicorp.com/consul/docs/connect/ca",
    ),
    (
        "discovery-chain",
        "https://developer.hashicorp.com/consul/docs/connect/manage-traffic/discovery-chain",
    ),
    (
        "l7-traffic",
        "https://developer.hashicorp.com/consul/docs/connect/manage-traffic",
    ),
    (
        "agent-blocking",
        "https://developer.hashicorp.com/consul/api-docs/features/blocking",
    ),
    (
        "transparent",
        "https://developer.hashicorp.com/consul/docs/connect/transparent-proxy",
    ),
    (
        "xds",
        "https://developer.hashicorp.com/consul/docs/connect/proxies/envoy",
    ),
    ("upstreams", PROXY_CONFIG_DOC),
    ("unix-sockets", PROXY_CONFIG_DOC),
    ("hostname-endpoints", PROXY_CONFIG_DOC),
    ("config-reload", PROXY_CONFIG_DOC),
    (
        "fail-static",
        "https://developer.hashicorp.com/consul/api-docs/features/caching",
    ),
];

/// Consul's reference of a proxy's registration (upstreams, local app, sockets).
const PROXY_CONFIG_DOC: &str =
    "https://developer.hashicorp.com/consul/docs/connect/proxies/proxy-config-reference";

/// The Consul pages for a scenario needing `features`: the proxy-integration page, then one page
/// per feature that has one, each once.
pub fn docs(features: &[String]) -> Vec<String> {
    let mut out = vec![CUSTOM_PROXY_DOC.to_owned()];
    for f in features {
        for (name, url) in FEATURE_DOCS {
            if name == f && !out.iter().any(|u| u == url) {
                out.push((*url).to_owned());
            }
        }
    }
    out
}

/// The repository path of built-in scenario `id`'s file (`scenarios/catalogue/core/x.toml`).
pub fn catalogue_path(id: &str) -> Option<String> {
    let file = format!("/{id}.toml");
    catalogue_files()
        .into_iter()
        .find(|(path, _)| path.ends_with(&file))
        .map(|(path, _)| format!("scenarios/{path}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_scenario_has_a_catalogue_file_and_docs() {
        for s in scenarios::catalogue() {
            let path = catalogue_path(&s.id).unwrap_or_else(|| panic!("{}", s.id));
            assert!(path.starts_with("scenarios/catalogue/"), "{path}");
            assert!(path.ends_with(&format!("/{}.toml", s.id)), "{path}");
            let docs = docs(&s.features);
            assert_eq!(docs[0], CUSTOM_PROXY_DOC);
            // Every scenario but the token and persistent-connection ones has a page of its own.
            let generic = s
                .features
                .iter()
                .all(|f| matches!(f.as_str(), "token-file" | "persistent-connections"));
            assert!(generic || docs.len() >= 2, "{}: {docs:?}", s.id);
        }
        assert_eq!(catalogue_path("no-such-scenario"), None);
    }

    #[test]
    fn docs_are_listed_once_each() {
        let d = docs(&["l4".into(), "l7-http".into(), "ca-rotation".into()]);
        assert_eq!(
            d,
            [
                CUSTOM_PROXY_DOC,
                "https://developer.hashicorp.com/consul/docs/connect/intentions",
                "https://developer.hashicorp.com/consul/docs/connect/ca"
            ]
        );
    }
}
