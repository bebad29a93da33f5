//! Test-only deliberately broken behaviours (cargo feature `sabotage`, off by default), so the
//! conformance harness can prove every scenario fails against at least one broken proxy.
//!
//! A [`Sabotages`] set is chosen at run time (`--sabotage NAME`, repeatable) and injected through
//! the proxy's seam ([`seam`], which is `crate::seam` in this build): the [`Invocation`]'s set
//! becomes the [`AgentClient`]'s `ClientHooks` ([`AgentClient::with_sabotage`] in tests); the
//! control plane copies it into every [`Snapshot`]'s [`Hooks`] and every [`IntentionSet`]'s
//! `AuthzHooks`; the data plane asks the snapshot's. The core only calls the seam's hooks, which
//! do nothing in the default build (`src/seam.rs`); without the feature this module does not
//! exist, in the library or the binary.
//!
//! By job: the names and the set (here), the `--sabotage` flag (`cli`), the snapshot's hooks
//! (`hooks`), the agent client's (`agent`), authorization (`authz`), open inbound connections
//! (`connection`), TLS (`tls`, `chain`), transparent routing (`transparent`), the L7 outbound
//! path (`routing`).
//!
//! [`Invocation`]: crate::cli::Invocation
//! [`AgentClient`]: crate::AgentClient
//! [`AgentClient::with_sabotage`]: crate::AgentClient::with_sabotage
//! [`Snapshot`]: crate::Snapshot
//! [`IntentionSet`]: crate::IntentionSet

mod agent;
mod authz;
mod chain;
mod cli;
mod connection;
mod hooks;
mod routing;
pub mod seam;
mod tls;
mod transparent;

#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;

use clap::builder::PossibleValue;

pub use self::hooks::Hooks;

/// One deliberately broken behaviour. Names (see [`Sabotage::as_str`]) are fixed: the scenario
/// catalogue refers to them verbatim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Sabotage {
    /// `ignore-deny`: L4 deny intentions are treated as allow.
    IgnoreDeny,
    /// `authorize-by-cn`: the client's identity is its Subject CN (as a service name) instead of
    /// its URI SAN, when a CN is present.
    AuthorizeByCn,
    /// `hardcoded-allow`: no matching intention means allow, whatever the default policy.
    HardcodedAllow,
    /// `first-match`: intentions evaluated lowest precedence first, first match wins.
    FirstMatch,
    /// `last-write-wins`: the matching intention with the highest `ModifyIndex` decides.
    LastWriteWins,
    /// `cache-intentions-forever`: intentions are fetched once and never refreshed.
    CacheIntentionsForever,
    /// `accept-any-trusted-cert`: any client certificate chaining to the roots is accepted; one
    /// without a service SPIFFE ID is authorized as the service `unknown`.
    AcceptAnyTrustedCert,
    /// `skip-expiry-check`: expired and not-yet-valid client leaves are accepted.
    SkipExpiryCheck,
    /// `serve-self-signed`: the inbound listener serves a self-signed certificate for the
    /// service instead of the leaf.
    ServeSelfSigned,
    /// `never-refresh-certs`: leaf and roots are fetched once and never refreshed.
    NeverRefreshCerts,
    /// `leaf-fetched-once`: the leaf is fetched once and never renewed (roots still refresh).
    LeafFetchedOnce,
    /// `never-recheck-open`: open connections are never re-authorized and have no maximum
    /// lifetime.
    NeverRecheckOpen,
    /// `fail-closed-agent-down`: while the last agent request failed (no answer or a 5xx), the
    /// data plane has no state: every new connection is refused.
    FailClosedAgentDown,
    /// `fail-open-agent-down`: while the agent is unreachable (no answer), every inbound
    /// connection is allowed.
    FailOpenAgentDown,
    /// `authorize-via-agent`: each inbound L4 connection is authorized by a synchronous
    /// `POST /v1/agent/connect/authorize`; an agent error refuses it.
    AuthorizeViaAgent,
    /// `drop-state-on-error`: `fail-closed-agent-down`, and no `?cached` on any request.
    DropStateOnError,
    /// `no-client-cert`: outbound connections present no client certificate.
    NoClientCert,
    /// `skip-upstream-identity`: the upstream's SPIFFE identity is not checked (its chain is).
    SkipUpstreamIdentity,
    /// `resolve-endpoints-once`: upstream endpoints are resolved once and never refreshed.
    ResolveEndpointsOnce,
    /// `tight-polling`: every watch polls without `index`/`hash` every 50 ms.
    TightPolling,
    /// `missing-token`: requests other than the first carry no token.
    MissingToken,
    /// `stall-after-index-reset`: when the agent's index goes backwards, keep sending the old
    /// (higher) index.
    StallAfterIndexReset,
    /// `ignore-permissions`: an L7 intention with `Permissions` is treated as an L4 allow.
    IgnorePermissions,
    /// `authorize-per-connection`: the L7 decision of a connection's first request (HTTP/1.1) or
    /// first stream (HTTP/2) is reused for the rest of it.
    AuthorizePerConnection,
    /// `ignore-config-changes`: the registration is read once; later changes (new upstreams)
    /// are never seen.
    IgnoreConfigChanges,
    /// `ignore-discovery-chain`: upstreams resolve `health/connect/<upstream name>` directly,
    /// ignoring redirects and failover.
    IgnoreDiscoveryChain,
    /// `ignore-token-file`: `-token-file` is ignored.
    IgnoreTokenFile,
    /// `ignore-original-dst`: transparent connections all go to the first upstream of the
    /// snapshot, whatever their original destination.
    IgnoreOriginalDst,
    /// `forward-unknown`: transparent connections to unknown destinations go to the first
    /// upstream instead of being refused.
    ForwardUnknown,
    /// `ignore-implicit-upstreams`: transparent mode serves only the registration's `Upstreams`,
    /// never the upstreams Consul derives from intentions (a proxy written for explicit mode).
    IgnoreImplicitUpstreams,
    /// `reject-hostname-endpoints`: endpoints whose address is a host name rather than an IP
    /// literal are dropped from the snapshot (a proxy that only parses IPs).
    RejectHostnameEndpoints,
    /// `ignore-app-socket`: `LocalServiceSocketPath` is ignored; the local app is dialed at
    /// `LocalServiceAddress:LocalServicePort` as if there were no socket (a proxy without unix
    /// socket support).
    IgnoreAppSocket,
    /// `drop-on-change`: every open inbound connection is closed as soon as the intentions, the
    /// leaf or the roots change (a fresh load from the agent counts, whatever it holds), as
    /// inline-cert Envoy's listener drain does.
    DropOnChange,
    /// `ignore-grpc-paths`: for gRPC requests (`content-type: application/grpc*`), L7 path
    /// matches (`PathExact`, `PathPrefix`, `PathRegex`) match any path, as in a proxy that does
    /// not understand gRPC method paths.
    IgnoreGrpcPaths,
    /// `drop-trailers`: HTTP/2 response trailers (`grpc-status`, custom ones) are not passed on,
    /// inbound (application to caller) nor through upstream listeners.
    DropTrailers,
    /// `p256-only`: only EC P-256 keys load: a leaf with another key (in it or in its chain) is
    /// refused and the previous one kept, and roots whose key is not P-256 are dropped (a proxy
    /// that hard-codes Consul's default key type; in an RSA or P-384 cluster its peers' chains no
    /// longer verify).
    P256Only,
    /// `leaf-without-chain`: only the first certificate of `CertPEM` is served, without the
    /// intermediates that follow it.
    LeafWithoutChain,
    /// `roots-only-verification`: peer chains are verified against the roots alone, ignoring
    /// the intermediates the peer presents and the roots' `IntermediateCerts`.
    RootsOnlyVerification,
    /// `policy-on-timer`: the default intention policy is re-read only on its timer, not when the
    /// agent answers again after failing (a restarted agent's new policy is missed for minutes).
    PolicyOnTimer,
    /// `raw-path-authz`: HTTP request paths are neither normalized nor resolved: permissions
    /// match the path as sent and the application receives it as sent (Consul before 1.20.1,
    /// CVE-2024-10005).
    RawPathAuthz,
    /// `ignore-routes`: every request goes to the chain's default (last, catch-all) route.
    IgnoreRoutes,
    /// `ignore-splits`: every request takes a splitter's first split.
    IgnoreSplits,
    /// `ignore-subsets`: subset targets use every instance of the service (the subset filter is dropped).
    IgnoreSubsets,
    /// `no-retries`: requests are never retried.
    NoRetries,
    /// `retry-unbounded`: `NumRetries` is ignored: a retriable request is retried up to 10 times.
    RetryUnbounded,
    /// `ignore-timeouts`: no route request timeout.
    IgnoreTimeouts,
    /// `ignore-prefix-rewrite`: a route's `PrefixRewrite` is not applied.
    IgnorePrefixRewrite,
    /// `ignore-header-manipulation`: route and split request/response header changes are not applied.
    IgnoreHeaderManipulation,
    /// `ignore-limits`: the upstream's `Limits` are ignored (no circuit breaking).
    IgnoreLimits,
    /// `no-outlier-detection`: `PassiveHealthCheck` is ignored: failing endpoints are never ejected.
    NoOutlierDetection,
    /// `ignore-hash-policy`: `ring_hash`/`maglev` hash policies are ignored: round robin instead.
    IgnoreHashPolicy,
    /// `stale-routes`: routing changes apply only to new connections of the application (each keeps the snapshot it started with).
    StaleRoutes,
    /// `ignore-lb-policy`: every load-balancing policy (least request, random, hashing) becomes
    /// round robin.
    IgnoreLbPolicy,
    /// `never-repoll-query`: a prepared-query upstream is executed once and never again.
    NeverRepollQuery,
    /// `no-protocol-override`: in L4-only mode the discovery chain is requested without
    /// `OverrideProtocol = "tcp"`.
    NoProtocolOverride,
    /// `ignore-inbound-limit`: `max_inbound_connections` is ignored: every inbound connection
    /// is served, however many are open.
    IgnoreInboundLimit,
    /// `ignore-local-timeouts`: `local_connect_timeout_ms` and `local_request_timeout_ms` are
    /// ignored: the local application is dialed for as long as the kernel tries (here: 10
    /// minutes) and its answers are awaited without limit.
    IgnoreLocalTimeouts,
    /// `fail-open-on-403`: when the token may not read the destination's intentions (403), the
    /// proxy allows every source (`* -> db` allow) instead of failing closed.
    FailOpenOn403,
    /// `ignore-mesh-entry`: the `mesh` config entry is read but never applied: request
    /// normalization, TLS bounds and XFCC handling stay at Consul's no-entry defaults.
    IgnoreMeshEntry,
    /// `pass-spoofed-xfcc`: upstream listeners pass the application's own
    /// `X-Forwarded-Client-Cert` on (Envoy's outbound connection manager sanitizes it), so the
    /// destination's application sees an identity nobody proved.
    PassSpoofedXfcc,
    /// `require-ca-spiffe-san`: an inbound peer whose chain presents a CA certificate (an
    /// intermediate) without a `spiffe://` URI SAN is refused (a proxy without the integration
    /// guide's opt-out for CA providers that bend SPIFFE).
    RequireCaSpiffeSan,
    /// `skip-agent-tls-verify`: an `https://` agent's certificate is not verified (any CA, any
    /// name), as with `CONSUL_HTTP_SSL_VERIFY=false`.
    SkipAgentTlsVerify,
    /// `ignore-mesh-destinations-only`: transparent mode passes dials of destinations outside
    /// the mesh through even when the `mesh` entry sets `TransparentProxy.MeshDestinationsOnly`.
    IgnoreMeshDestinationsOnly,
    /// `always-permissive`: the public listener takes plaintext sent to the application's port
    /// to the application whatever the service's `MutualTLSMode` (and the mesh entry) say.
    AlwaysPermissive,
    /// `ignore-outgoing-tls-bounds`: the `mesh` entry's `TLS.Outgoing` floor, ceiling and cipher
    /// suites are not applied to connections to upstream instances.
    IgnoreOutgoingTlsBounds,
    /// `case-sensitive-headers`: intention header rules compare header names byte for byte
    /// (HTTP names are case-insensitive) and ignore `IgnoreCase` on values.
    CaseSensitiveHeaders,
    /// `jwt-skip-verify`: any decodable JWT counts as verified (no signature, expiry, issuer
    /// or audience check), so forged, expired and foreign tokens reach the application.
    JwtSkipVerify,
    /// `jwt-ignore-claims`: an intention's or permission's `VerifyClaims` are not checked.
    JwtIgnoreClaims,
    /// `jwt-stale-jwks`: a remote JWKS is fetched once and kept for ever (its `CacheDuration`
    /// ignored), so a key rotation at the issuer is never followed.
    JwtStaleJwks,
    /// `jwt-no-forward-payload`: a provider's `Forwarding.HeaderName` is ignored: the
    /// application never receives the verified token's payload.
    JwtNoForwardPayload,
    /// `jwt-forward-spoofable`: a caller's own header of a provider's `Forwarding.HeaderName`
    /// is passed on (Envoy removes it before verifying), so the application may take a forged
    /// payload for a verified one.
    JwtForwardSpoofable,
    /// `anonymous-on-403`: a request the agent refuses with 403 is sent again without the
    /// token, so the agent's default (anonymous) token decides what the proxy may read, and
    /// nothing is logged (a proxy falling back on the agent's default token).
    AnonymousOn403,
    /// `ipv6-unbracketed`: addresses are joined as `host:port` text without brackets and parsed
    /// again (`::1:20000` is no address): IPv6 endpoints are dropped and an IPv6 local
    /// application is dialed on 127.0.0.1 instead.
    Ipv6Unbracketed,
}

impl Sabotage {
    /// Every behaviour, in declaration order.
    pub const ALL: [Self; 73] = [
        Self::IgnoreDeny,
        Self::AuthorizeByCn,
        Self::HardcodedAllow,
        Self::FirstMatch,
        Self::LastWriteWins,
        Self::CacheIntentionsForever,
        Self::AcceptAnyTrustedCert,
        Self::SkipExpiryCheck,
        Self::ServeSelfSigned,
        Self::NeverRefreshCerts,
        Self::LeafFetchedOnce,
        Self::NeverRecheckOpen,
        Self::FailClosedAgentDown,
        Self::FailOpenAgentDown,
        Self::AuthorizeViaAgent,
        Self::DropStateOnError,
        Self::NoClientCert,
        Self::SkipUpstreamIdentity,
        Self::ResolveEndpointsOnce,
        Self::TightPolling,
        Self::MissingToken,
        Self::StallAfterIndexReset,
        Self::IgnorePermissions,
        Self::AuthorizePerConnection,
        Self::IgnoreConfigChanges,
        Self::IgnoreDiscoveryChain,
        Self::IgnoreTokenFile,
        Self::IgnoreOriginalDst,
        Self::ForwardUnknown,
        Self::IgnoreImplicitUpstreams,
        Self::RejectHostnameEndpoints,
        Self::IgnoreAppSocket,
        Self::DropOnChange,
        Self::IgnoreGrpcPaths,
        Self::DropTrailers,
        Self::P256Only,
        Self::LeafWithoutChain,
        Self::RootsOnlyVerification,
        Self::PolicyOnTimer,
        Self::RawPathAuthz,
        Self::IgnoreRoutes,
        Self::IgnoreSplits,
        Self::IgnoreSubsets,
        Self::NoRetries,
        Self::RetryUnbounded,
        Self::IgnoreTimeouts,
        Self::IgnorePrefixRewrite,
        Self::IgnoreHeaderManipulation,
        Self::IgnoreLimits,
        Self::NoOutlierDetection,
        Self::IgnoreHashPolicy,
        Self::StaleRoutes,
        Self::IgnoreLbPolicy,
        Self::NeverRepollQuery,
        Self::NoProtocolOverride,
        Self::IgnoreInboundLimit,
        Self::IgnoreLocalTimeouts,
        Self::FailOpenOn403,
        Self::IgnoreMeshEntry,
        Self::PassSpoofedXfcc,
        Self::RequireCaSpiffeSan,
        Self::SkipAgentTlsVerify,
        Self::IgnoreMeshDestinationsOnly,
        Self::AlwaysPermissive,
        Self::IgnoreOutgoingTlsBounds,
        Self::CaseSensitiveHeaders,
        Self::JwtSkipVerify,
        Self::JwtIgnoreClaims,
        Self::JwtStaleJwks,
        Self::JwtNoForwardPayload,
        Self::JwtForwardSpoofable,
        Self::AnonymousOn403,
        Self::Ipv6Unbracketed,
    ];

    /// The kebab-case name used by `--sabotage` and the scenario catalogue.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::IgnoreDeny => "ignore-deny",
            Self::AuthorizeByCn => "authorize-by-cn",
            Self::HardcodedAllow => "hardcoded-allow",
            Self::FirstMatch => "first-match",
            Self::LastWriteWins => "last-write-wins",
            Self::CacheIntentionsForever => "cache-intentions-forever",
            Self::AcceptAnyTrustedCert => "accept-any-trusted-cert",
            Self::SkipExpiryCheck => "skip-expiry-check",
            Self::ServeSelfSigned => "serve-self-signed",
            Self::NeverRefreshCerts => "never-refresh-certs",
            Self::LeafFetchedOnce => "leaf-fetched-once",
            Self::NeverRecheckOpen => "never-recheck-open",
            Self::FailClosedAgentDown => "fail-closed-agent-down",
            Self::FailOpenAgentDown => "fail-open-agent-down",
            Self::AuthorizeViaAgent => "authorize-via-agent",
            Self::DropStateOnError => "drop-state-on-error",
            Self::NoClientCert => "no-client-cert",
            Self::SkipUpstreamIdentity => "skip-upstream-identity",
            Self::ResolveEndpointsOnce => "resolve-endpoints-once",
            Self::TightPolling => "tight-polling",
            Self::MissingToken => "missing-token",
            Self::StallAfterIndexReset => "stall-after-index-reset",
            Self::IgnorePermissions => "ignore-permissions",
            Self::AuthorizePerConnection => "authorize-per-connection",
            Self::IgnoreConfigChanges => "ignore-config-changes",
            Self::IgnoreDiscoveryChain => "ignore-discovery-chain",
            Self::IgnoreTokenFile => "ignore-token-file",
            Self::IgnoreOriginalDst => "ignore-original-dst",
            Self::ForwardUnknown => "forward-unknown",
            Self::IgnoreImplicitUpstreams => "ignore-implicit-upstreams",
            Self::RejectHostnameEndpoints => "reject-hostname-endpoints",
            Self::IgnoreAppSocket => "ignore-app-socket",
            Self::DropOnChange => "drop-on-change",
            Self::IgnoreGrpcPaths => "ignore-grpc-paths",
            Self::DropTrailers => "drop-trailers",
            Self::P256Only => "p256-only",
            Self::LeafWithoutChain => "leaf-without-chain",
            Self::RootsOnlyVerification => "roots-only-verification",
            Self::PolicyOnTimer => "policy-on-timer",
            Self::RawPathAuthz => "raw-path-authz",
            Self::IgnoreRoutes => "ignore-routes",
            Self::IgnoreSplits => "ignore-splits",
            Self::IgnoreSubsets => "ignore-subsets",
            Self::NoRetries => "no-retries",
            Self::RetryUnbounded => "retry-unbounded",
            Self::IgnoreTimeouts => "ignore-timeouts",
            Self::IgnorePrefixRewrite => "ignore-prefix-rewrite",
            Self::IgnoreHeaderManipulation => "ignore-header-manipulation",
            Self::IgnoreLimits => "ignore-limits",
            Self::NoOutlierDetection => "no-outlier-detection",
            Self::IgnoreHashPolicy => "ignore-hash-policy",
            Self::StaleRoutes => "stale-routes",
            Self::IgnoreLbPolicy => "ignore-lb-policy",
            Self::NeverRepollQuery => "never-repoll-query",
            Self::NoProtocolOverride => "no-protocol-override",
            Self::IgnoreInboundLimit => "ignore-inbound-limit",
            Self::IgnoreLocalTimeouts => "ignore-local-timeouts",
            Self::FailOpenOn403 => "fail-open-on-403",
            Self::IgnoreMeshEntry => "ignore-mesh-entry",
            Self::PassSpoofedXfcc => "pass-spoofed-xfcc",
            Self::RequireCaSpiffeSan => "require-ca-spiffe-san",
            Self::SkipAgentTlsVerify => "skip-agent-tls-verify",
            Self::IgnoreMeshDestinationsOnly => "ignore-mesh-destinations-only",
            Self::AlwaysPermissive => "always-permissive",
            Self::IgnoreOutgoingTlsBounds => "ignore-outgoing-tls-bounds",
            Self::CaseSensitiveHeaders => "case-sensitive-headers",
            Self::JwtSkipVerify => "jwt-skip-verify",
            Self::JwtIgnoreClaims => "jwt-ignore-claims",
            Self::JwtStaleJwks => "jwt-stale-jwks",
            Self::JwtNoForwardPayload => "jwt-no-forward-payload",
            Self::JwtForwardSpoofable => "jwt-forward-spoofable",
            Self::AnonymousOn403 => "anonymous-on-403",
            Self::Ipv6Unbracketed => "ipv6-unbracketed",
        }
    }

    fn bit(self) -> u128 {
        1 << (self as u8)
    }
}

/// A name that is not one of [`Sabotage::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown sabotage {0:?}; known: {known}", known = known_names())]
pub struct UnknownSabotage(pub String);

fn known_names() -> String {
    Sabotage::ALL.map(Sabotage::as_str).join(", ")
}

impl FromStr for Sabotage {
    type Err = UnknownSabotage;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|x| x.as_str() == s)
            .ok_or_else(|| UnknownSabotage(s.to_owned()))
    }
}

impl fmt::Display for Sabotage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl clap::ValueEnum for Sabotage {
    fn value_variants<'a>() -> &'a [Self] {
        &Self::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.as_str()))
    }
}

/// A set of [`Sabotage`]s (empty = the reference behaviour).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Sabotages(u128);

impl Sabotages {
    /// No sabotage.
    pub const NONE: Self = Self(0);

    /// Whether `s` is in the set.
    pub fn contains(self, s: Sabotage) -> bool {
        self.0 & s.bit() != 0
    }

    /// The set with `s` added.
    pub fn with(self, s: Sabotage) -> Self {
        Self(self.0 | s.bit())
    }

    /// True for the reference behaviour.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The members, in [`Sabotage::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Sabotage> {
        Sabotage::ALL.into_iter().filter(move |s| self.contains(*s))
    }
}

impl From<Sabotage> for Sabotages {
    fn from(s: Sabotage) -> Self {
        Self::NONE.with(s)
    }
}

impl FromIterator<Sabotage> for Sabotages {
    fn from_iter<I: IntoIterator<Item = Sabotage>>(iter: I) -> Self {
        iter.into_iter().fold(Self::NONE, Self::with)
    }
}

impl fmt::Display for Sabotages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.iter().map(Sabotage::as_str).collect();
        f.write_str(&names.join(","))
    }
}
