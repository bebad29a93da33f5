//! The embedded catalogue: every scenario file under `catalogue/`, compiled into the crate, in
//! profile order (core, l7, extended, transparent) then by id.

use crate::model::Scenario;
use crate::parse::parse;

/// `(path relative to the crate, text)` of every catalogue file, ordered by profile then id.
const FILES: &[(&str, &str)] = &[
    (
        "catalogue/core/agent-blocking.toml",
        include_str!("../catalogue/core/agent-blocking.toml"),
    ),
    (
        "catalogue/core/ca-intermediate-chain.toml",
        include_str!("../catalogue/core/ca-intermediate-chain.toml"),
    ),
    (
        "catalogue/core/ca-key-types.toml",
        include_str!("../catalogue/core/ca-key-types.toml"),
    ),
    (
        "catalogue/core/ca-rotation.toml",
        include_str!("../catalogue/core/ca-rotation.toml"),
    ),
    (
        "catalogue/core/ca-rotation-key-type.toml",
        include_str!("../catalogue/core/ca-rotation-key-type.toml"),
    ),
    (
        "catalogue/core/ca-rotation-no-cross-sign.toml",
        include_str!("../catalogue/core/ca-rotation-no-cross-sign.toml"),
    ),
    (
        "catalogue/core/default-policy-allow.toml",
        include_str!("../catalogue/core/default-policy-allow.toml"),
    ),
    (
        "catalogue/core/default-policy-deny.toml",
        include_str!("../catalogue/core/default-policy-deny.toml"),
    ),
    (
        "catalogue/core/fail-static-agent-down.toml",
        include_str!("../catalogue/core/fail-static-agent-down.toml"),
    ),
    (
        "catalogue/core/fail-static-agent-hung.toml",
        include_str!("../catalogue/core/fail-static-agent-hung.toml"),
    ),
    (
        "catalogue/core/fail-static-servers-down.toml",
        include_str!("../catalogue/core/fail-static-servers-down.toml"),
    ),
    (
        "catalogue/core/index-reset.toml",
        include_str!("../catalogue/core/index-reset.toml"),
    ),
    (
        "catalogue/core/intention-change.toml",
        include_str!("../catalogue/core/intention-change.toml"),
    ),
    (
        "catalogue/core/l4-allow-deny.toml",
        include_str!("../catalogue/core/l4-allow-deny.toml"),
    ),
    (
        "catalogue/core/leaf-renewal.toml",
        include_str!("../catalogue/core/leaf-renewal.toml"),
    ),
    (
        "catalogue/core/persistent-connection.toml",
        include_str!("../catalogue/core/persistent-connection.toml"),
    ),
    (
        "catalogue/core/precedence-property.toml",
        include_str!("../catalogue/core/precedence-property.toml"),
    ),
    (
        "catalogue/core/precedence-table-8v6-8v5.toml",
        include_str!("../catalogue/core/precedence-table-8v6-8v5.toml"),
    ),
    (
        "catalogue/core/precedence-table-9v5-6v5.toml",
        include_str!("../catalogue/core/precedence-table-9v5-6v5.toml"),
    ),
    (
        "catalogue/core/precedence-table-9v8-9v6.toml",
        include_str!("../catalogue/core/precedence-table-9v8-9v6.toml"),
    ),
    (
        "catalogue/core/served-identity.toml",
        include_str!("../catalogue/core/served-identity.toml"),
    ),
    (
        "catalogue/core/spiffe-validation.toml",
        include_str!("../catalogue/core/spiffe-validation.toml"),
    ),
    (
        "catalogue/core/trust-domain-check.toml",
        include_str!("../catalogue/core/trust-domain-check.toml"),
    ),
    (
        "catalogue/core/unrelated-change-keeps-connections.toml",
        include_str!("../catalogue/core/unrelated-change-keeps-connections.toml"),
    ),
    (
        "catalogue/core/upstream-basic.toml",
        include_str!("../catalogue/core/upstream-basic.toml"),
    ),
    (
        "catalogue/core/upstream-health.toml",
        include_str!("../catalogue/core/upstream-health.toml"),
    ),
    (
        "catalogue/core/upstream-impostor.toml",
        include_str!("../catalogue/core/upstream-impostor.toml"),
    ),
    (
        "catalogue/l7/l7-change-on-keepalive.toml",
        include_str!("../catalogue/l7/l7-change-on-keepalive.toml"),
    ),
    (
        "catalogue/l7/l7-default-deny-fallthrough.toml",
        include_str!("../catalogue/l7/l7-default-deny-fallthrough.toml"),
    ),
    (
        "catalogue/l7/l7-grpc-method.toml",
        include_str!("../catalogue/l7/l7-grpc-method.toml"),
    ),
    (
        "catalogue/l7/l7-grpc-upstream.toml",
        include_str!("../catalogue/l7/l7-grpc-upstream.toml"),
    ),
    (
        "catalogue/l7/l7-http2-multiplexed-change.toml",
        include_str!("../catalogue/l7/l7-http2-multiplexed-change.toml"),
    ),
    (
        "catalogue/l7/l7-path-method-header.toml",
        include_str!("../catalogue/l7/l7-path-method-header.toml"),
    ),
    (
        "catalogue/l7/l7-path-normalization.toml",
        include_str!("../catalogue/l7/l7-path-normalization.toml"),
    ),
    (
        "catalogue/extended/acl-token-file.toml",
        include_str!("../catalogue/extended/acl-token-file.toml"),
    ),
    (
        "catalogue/extended/agent-restart.toml",
        include_str!("../catalogue/extended/agent-restart.toml"),
    ),
    (
        "catalogue/extended/agent-restart-policy.toml",
        include_str!("../catalogue/extended/agent-restart-policy.toml"),
    ),
    (
        "catalogue/extended/config-change.toml",
        include_str!("../catalogue/extended/config-change.toml"),
    ),
    (
        "catalogue/extended/discovery-chain-failover.toml",
        include_str!("../catalogue/extended/discovery-chain-failover.toml"),
    ),
    (
        "catalogue/extended/discovery-chain-redirect.toml",
        include_str!("../catalogue/extended/discovery-chain-redirect.toml"),
    ),
    (
        "catalogue/transparent/hostname-endpoint.toml",
        include_str!("../catalogue/transparent/hostname-endpoint.toml"),
    ),
    (
        "catalogue/transparent/tproxy-inbound-capture.toml",
        include_str!("../catalogue/transparent/tproxy-inbound-capture.toml"),
    ),
    (
        "catalogue/transparent/tproxy-no-loop.toml",
        include_str!("../catalogue/transparent/tproxy-no-loop.toml"),
    ),
    (
        "catalogue/transparent/tproxy-outbound-deny-unknown.toml",
        include_str!("../catalogue/transparent/tproxy-outbound-deny-unknown.toml"),
    ),
    (
        "catalogue/transparent/tproxy-outbound-virtual-ip.toml",
        include_str!("../catalogue/transparent/tproxy-outbound-virtual-ip.toml"),
    ),
    (
        "catalogue/transparent/uds-local-app.toml",
        include_str!("../catalogue/transparent/uds-local-app.toml"),
    ),
    (
        "catalogue/transparent/uds-upstream.toml",
        include_str!("../catalogue/transparent/uds-upstream.toml"),
    ),
];

/// Every catalogue file as `(path, text)`, ordered by profile then id (the path names the
/// profile: `catalogue/<profile>/<id>.toml`).
pub fn catalogue_files() -> Vec<(&'static str, &'static str)> {
    FILES.to_vec()
}

/// Every catalogue scenario, parsed and validated, ordered by profile then id. Generated
/// scenarios (`precedence-property`) are returned unexpanded: see [`crate::expand`].
///
/// The files are part of the crate and a test proves each one loads, so none is ever left out in
/// practice; a file that did not load would be skipped rather than panic.
pub fn catalogue() -> Vec<Scenario> {
    FILES
        .iter()
        .filter_map(|(path, text)| parse(path, text).ok())
        .collect()
}

#[cfg(test)]
mod tests;
