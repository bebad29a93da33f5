//! What a scenario's checks observe: the `Check` kinds and the small enums they use (where a probe
//! connects, the outcome it expects, which root a served leaf must chain to).

use std::collections::BTreeMap;

use super::{BurstCheck, Identity, RequestCheck, SpreadCheck, db};
use serde::{Deserialize, Serialize};

/// What a check observes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Check {
    /// A new inbound connection as `identity`: `allowed` = bytes reach the app and come back;
    /// `refused` = the handshake fails or the connection closes before any byte reaches the app.
    Inbound {
        /// Who connects.
        identity: Identity,
        /// Expected outcome.
        outcome: Outcome,
        /// Where the connection goes: the proxy's public listener, or (transparent mode) the
        /// application's own port from outside the pod, where the redirect rules must capture it
        /// (with `no-cert` the probe then speaks plain TCP, no TLS at all).
        #[serde(default)]
        via: InboundVia,
    },
    /// An HTTP request as `identity` (on the named keep-alive connection when `conn` is given).
    Http {
        /// Who (ignored with `conn`).
        identity: Option<Identity>,
        /// A connection opened by an `open` step with `protocol = "http"`.
        conn: Option<String>,
        /// Method (default GET).
        #[serde(default)]
        method: Option<String>,
        /// Path.
        path: String,
        /// Request headers.
        #[serde(default)]
        headers: BTreeMap<String, String>,
        /// A JWT minted for the request, sent as `Authorization: Bearer`.
        #[serde(default)]
        jwt: Option<super::JwtToken>,
        /// Expected status: 200 from the app, or 403 from the proxy. Whatever is not a 2xx must
        /// be the proxy's own answer: the app must receive nothing while the check runs.
        status: u16,
        /// With a 2xx `status` on a new connection: the path (no query) the application must
        /// have received, e.g. the normalized form of a `path` written with dot segments.
        #[serde(default)]
        app_path: Option<String>,
        /// With a 2xx `status`: headers the application must have received, each with exactly
        /// this value (several received values are joined with `, `). `{jwt-payload}` stands for
        /// the payload segment of the check's `jwt` (base64url), `{jwt-payload-padded}` for the
        /// same padded with `=`.
        #[serde(default)]
        app_headers: BTreeMap<String, String>,
        /// With a 2xx `status`: headers the application must not have received.
        #[serde(default)]
        app_without: Vec<String>,
        /// On an HTTP/2 connection: run this many streams at once (default 1); every one must
        /// answer `status`.
        #[serde(default)]
        streams: Option<u32>,
    },
    /// A unary gRPC call (HTTP/2): as `identity` on a new connection, on the named HTTP/2
    /// connection, or from the app through the named upstream's local listener (cleartext
    /// HTTP/2 to the proxy, which carries it over mTLS to an instance).
    Grpc {
        /// Who (a new mTLS connection to the public listener).
        #[serde(default)]
        identity: Option<Identity>,
        /// A connection opened by an `open` step with `protocol = "http2"` or `"grpc"`.
        #[serde(default)]
        conn: Option<String>,
        /// The upstream whose local listener the app calls.
        #[serde(default)]
        upstream: Option<String>,
        /// `/package.Service/Method`.
        path: String,
        /// Request metadata (HTTP/2 headers).
        #[serde(default)]
        metadata: BTreeMap<String, String>,
        /// Expected grpc-status code (0 OK, 7 PERMISSION_DENIED, ...); default 0.
        #[serde(default)]
        code: u32,
        /// Trailers the answer must carry (name to value), e.g. the harness server's
        /// `x-conformance-trailer = "kept"`.
        #[serde(default)]
        trailers: BTreeMap<String, String>,
        /// Run this many calls at once on the connection (default 1); every one must match.
        #[serde(default)]
        streams: Option<u32>,
    },
    /// A connection opened earlier still carries bytes both ways.
    ConnOpen {
        /// The connection.
        conn: String,
    },
    /// A TLS handshake with the public listener as `identity`, the client offering only
    /// `tls_version` (`1.2` or `1.3`; both when absent) and, for TLS 1.2, only `cipher_suites`
    /// (IANA names; rustls' defaults when empty): `allowed` = the handshake completes (with
    /// `negotiated_cipher`, that suite was chosen); `refused` = it fails.
    TlsHandshake {
        /// Who connects.
        identity: Identity,
        /// The only version offered.
        #[serde(default)]
        tls_version: Option<String>,
        /// The TLS 1.2 suites offered.
        #[serde(default)]
        cipher_suites: Vec<String>,
        /// Expected outcome.
        outcome: Outcome,
        /// The suite the handshake must settle on (IANA name).
        #[serde(default)]
        negotiated_cipher: Option<String>,
    },
    /// A connection opened earlier has been closed by the proxy.
    ConnClosed {
        /// The connection.
        conn: String,
    },
    /// The certificate the proxy serves on its inbound listener.
    ServedLeaf {
        /// The service its URI SAN must name (default `db`).
        #[serde(default = "db")]
        service: String,
        /// Which root it must chain to.
        #[serde(default)]
        root: RootRef,
        /// It must not be the leaf served at the time of the named `issue`/`mark` (freshness).
        #[serde(default)]
        differs_from_mark: Option<String>,
        /// The served leaf's key type (`ec` or `rsa`), and with `key_bits` its size.
        #[serde(default)]
        key_type: Option<String>,
        /// The served leaf's key size in bits (EC curve size or RSA modulus).
        #[serde(default)]
        key_bits: Option<u32>,
        /// The presented chain must be exactly the leaf then the active root's
        /// `IntermediateCerts`, in order (as `CertPEM` carries them).
        #[serde(default)]
        full_chain: bool,
    },
    /// Bytes sent to the local upstream listener reach one of `reach` (instance ids), and the
    /// instance saw the proxy present a leaf for `presented` (default `db`).
    Upstream {
        /// The upstream name.
        upstream: String,
        /// Acceptable instances.
        reach: Vec<String>,
        /// Over several connections, every listed instance must be reached at least once.
        #[serde(default)]
        all: bool,
        /// The client identity the instance must have seen.
        #[serde(default = "db")]
        presented: String,
        /// How the app reaches the upstream: its local listener (a TCP port or a unix socket,
        /// as registered), or (transparent mode) the service's virtual IP.
        #[serde(default)]
        via: UpstreamVia,
    },
    /// Transparent mode: the app dials an address that belongs to no service (a plain TCP
    /// server outside the pod). `refused`: nothing reaches it or any instance; `allowed`: the
    /// proxy passes the bytes through to it.
    UnknownDestination {
        /// Expected outcome.
        outcome: Outcome,
        /// Which server is dialed (default the plain one outside the pod).
        #[serde(default)]
        to: OutsideTarget,
        /// The dial is made by a process running as the UID the redirect step excludes
        /// (`exclude = ["uid"]`) instead of the app.
        #[serde(default)]
        as_excluded_uid: bool,
    },
    /// Transparent mode: the proxy's own connections were not redirected back into it: every
    /// connection its outbound listener accepted so far came from the harness's app probes.
    NoRedirectLoop,
    /// Connections to the local upstream listener carry no bytes to any instance.
    UpstreamRefused {
        /// The upstream name.
        upstream: String,
    },
    /// The local listener of an upstream accepts connections.
    ListenerOpen {
        /// The upstream name.
        upstream: String,
    },
    /// How the proxy used the agent since the last `mark` (or since it became ready).
    AgentUsage {
        /// Every request carried the proxy's token.
        #[serde(default)]
        token_on_every_request: bool,
        /// These endpoint families were read with blocking queries (`roots`, `leaf`,
        /// `intentions`, `service`, `health`, `chain`).
        #[serde(default)]
        blocking: Vec<String>,
        /// At most this many requests per minute over the window.
        #[serde(default)]
        max_requests_per_minute: Option<u32>,
    },
    /// `l7-traffic`: one request from the app through an upstream's local listener.
    Request(RequestCheck),
    /// `l7-traffic`: many requests, spread over the instances as said (splits, subsets, load
    /// balancing, stickiness, ejection).
    Spread(SpreadCheck),
    /// `l7-traffic`: requests at once, some of them over the upstream's limits.
    Burst(BurstCheck),
    /// The proxy sent a request with an index smaller than one it had already used (it noticed
    /// the reset) and kept using blocking queries afterwards.
    IndexResetHonoured,
    /// Every `POST /v1/agent/connect/authorize` the proxy made carried a `ClientCertSerial`
    /// (a proxy that makes none passes, and the observation says so); meant as `info`.
    AuthorizeSerial,
    /// The proxy's output (stdout and stderr, terminal colours removed) has a line containing
    /// one of `contains` (ASCII case-insensitive): the proxy said why it refuses (e.g. a 403).
    ProxyLog {
        /// Texts any one of which a line must contain.
        contains: Vec<String>,
    },
}

/// Where an inbound probe connects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InboundVia {
    /// The proxy's public listener.
    #[default]
    PublicListener,
    /// The application's port, dialed from outside the pod (transparent mode).
    AppPort,
    /// The pod's plain server on the port the redirect step excludes (transparent mode with
    /// `exclude = ["inbound-port"]`): `allowed` means it was reached directly.
    ExcludedPort,
}

/// Which server outside the pod an `unknown-destination` check dials (none belongs to a
/// service).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutsideTarget {
    /// The plain server every transparent world has.
    #[default]
    Outside,
    /// The one on the port the redirect step excludes (`exclude = ["outbound-port"]`).
    ExcludedPort,
    /// The one on the address the redirect step excludes (`exclude = ["outbound-cidr"]`).
    ExcludedCidr,
}

/// How an upstream probe reaches the upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UpstreamVia {
    /// The upstream's local listener (TCP port or unix socket).
    #[default]
    Listener,
    /// The service's virtual IP, through the redirect rules (transparent mode).
    VirtualIp,
}

/// Allowed or refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Bytes flow.
    Allowed,
    /// Refused.
    Refused,
}

/// Which root a served leaf must chain to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RootRef {
    /// The currently active root (directly or through the cross-signed intermediate).
    #[default]
    Active,
    /// Any root currently listed.
    AnyListed,
}
