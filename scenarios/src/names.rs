//! The closed vocabularies scenario files name: proxy features, the broken behaviours the
//! harness's self-test proves each scenario catches, and the agent endpoint families of
//! `agent-usage` checks.

/// Features a proxy can declare; a scenario needing an undeclared one is `not-supported`.
pub const FEATURES: &[&str] = &[
    "l4",
    "l7-http",
    // HTTP/2 (ALPN h2, streams authorized one by one) and gRPC on top of it.
    "l7-http2",
    "l7-grpc",
    "upstreams",
    "discovery-chain",
    "persistent-connections",
    "fail-static",
    "ca-rotation",
    "leaf-renewal",
    "config-reload",
    "token-file",
    "agent-blocking",
    "transparent",
    "unix-sockets",
    "hostname-endpoints",
    // Configured over the agent's gRPC xDS port (Envoy), not the HTTP API: the harness starts
    // the sim's xDS server and writes a bootstrap; checks that read the HTTP request log are
    // not supported for such a proxy.
    "xds",
    // Outbound L7 traffic management per the discovery chain (the `l7-traffic` profile):
    // routes, splits, subsets, retries, timeouts, headers, load balancing, passive health,
    // limits.
    "l7-traffic",
    // The proxy can run as an L4-only proxy (the reference proxy: `Proxy.Config.l4_only`):
    // it asks for every discovery chain with `OverrideProtocol = "tcp"`, as Consul's guide tells
    // L4-only proxies to, and treats every upstream as TCP.
    "l4-only",
];

/// The deliberately broken behaviours of the reference proxy (`--sabotage NAME`, test builds
/// only) that a scenario's `catches` may name.
pub const BROKEN_BEHAVIOURS: &[&str] = &[
    "ignore-deny",
    "authorize-by-cn",
    "hardcoded-allow",
    "first-match",
    "last-write-wins",
    "cache-intentions-forever",
    "accept-any-trusted-cert",
    "skip-expiry-check",
    "serve-self-signed",
    "never-refresh-certs",
    "leaf-fetched-once",
    "never-recheck-open",
    "fail-closed-agent-down",
    "fail-open-agent-down",
    "authorize-via-agent",
    "drop-state-on-error",
    "no-client-cert",
    "skip-upstream-identity",
    "resolve-endpoints-once",
    "tight-polling",
    "missing-token",
    "stall-after-index-reset",
    "ignore-permissions",
    "authorize-per-connection",
    "ignore-config-changes",
    "ignore-discovery-chain",
    "ignore-token-file",
    "ignore-original-dst",
    "forward-unknown",
    "ignore-implicit-upstreams",
    "reject-hostname-endpoints",
    "ignore-app-socket",
    "drop-on-change",
    "policy-on-timer",
    "p256-only",
    "leaf-without-chain",
    "roots-only-verification",
    "ignore-grpc-paths",
    "drop-trailers",
    "raw-path-authz",
    "ignore-routes",
    "ignore-splits",
    "ignore-subsets",
    "no-retries",
    "retry-unbounded",
    "ignore-timeouts",
    "ignore-prefix-rewrite",
    "ignore-header-manipulation",
    "ignore-limits",
    "no-outlier-detection",
    "ignore-hash-policy",
    "stale-routes",
    "ignore-lb-policy",
    "never-repoll-query",
    "no-protocol-override",
    "ignore-inbound-limit",
    "ignore-local-timeouts",
    "fail-open-on-403",
    "ignore-mesh-entry",
    "pass-spoofed-xfcc",
    "require-ca-spiffe-san",
    "skip-agent-tls-verify",
    "ignore-mesh-destinations-only",
    "always-permissive",
    "ignore-outgoing-tls-bounds",
    "case-sensitive-headers",
    "jwt-skip-verify",
    "jwt-ignore-claims",
    "jwt-stale-jwks",
    "jwt-no-forward-payload",
    "jwt-forward-spoofable",
    "anonymous-on-403",
    "ipv6-unbracketed",
];

/// Deliberate misconfigurations of the environment rather than the proxy, for scenarios that
/// test the redirect rules (`catches` may name them too): `redirect-wrong-uid` installs the
/// rules for another UID than the proxy's (its own dials are captured: a loop);
/// `redirect-skip-inbound` leaves the application's port out of the inbound capture;
/// `redirect-ignore-exclusions` drops the scenario's `-exclude-*` flags (everything is captured).
pub const ENVIRONMENT_TAMPERS: &[&str] = &[
    "redirect-wrong-uid",
    "redirect-skip-inbound",
    "redirect-ignore-exclusions",
];

/// Endpoint families an `agent-usage` check can require to be read with blocking queries:
/// `roots` (`/v1/agent/connect/ca/roots`), `leaf` (`/v1/agent/connect/ca/leaf/:service`),
/// `intentions` (`/v1/connect/intentions/match`), `service` (`/v1/agent/service/:id`, by hash),
/// `health` (`/v1/health/connect/:service`), `chain` (`/v1/discovery-chain/:service`).
pub const BLOCKING_FAMILIES: &[&str] =
    &["roots", "leaf", "intentions", "service", "health", "chain"];

/// Health statuses of `status` fields.
pub const HEALTH_STATUSES: &[&str] = &["passing", "warning", "critical"];

/// Values of `setup.protocol` (Consul's `service-defaults` protocols).
pub const PROTOCOLS: &[&str] = &["tcp", "http", "http2", "grpc"];

/// Protocols on which L7 intentions (`Permissions`) are allowed.
pub const L7_PROTOCOLS: &[&str] = &["http", "http2", "grpc"];
