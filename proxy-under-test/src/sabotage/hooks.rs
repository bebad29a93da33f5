//! [`Hooks`], the sabotage context every [`Snapshot`] carries, and what the data plane asks it:
//! the snapshot to serve from (fail closed / fail open while the agent is down), the peer
//! identity (CN, any trusted certificate), the connection's decision (via the agent, or the first
//! L7 request's), trailers, the TLS configs; and what the control plane asks it while assembling:
//! the leaf and roots it loads, the local app, which endpoints the snapshot keeps.

use std::net::IpAddr;
use std::sync::Arc;

use rustls::ClientConfig;
use rustls_pki_types::CertificateDer;
use x509_parser::prelude::{FromDer, X509Certificate};

use super::authz::AuthzHooks;
use super::connection::PerConnection;
use super::{Sabotage, Sabotages, agent, chain, tls};
use crate::agent::AgentClient;
use crate::agent::types::AgentProxy;
use crate::authz::{Decision, DefaultPolicy, IntentionSet};
use crate::dataplane::l7::Body;
use crate::knobs::Knobs;
use crate::mesh::{MeshEntry, TlsBounds};
use crate::normalize::{EscapedSlashes, PathNormalization};
use crate::snapshot::{Endpoint, LocalApp, Snapshot};
use crate::spiffe::{ServiceId, service_id_of_cert};
use crate::tls::{ExpectedServer, InboundTls, Leaf, TlsError, TrustRoots};

/// The broken behaviours a snapshot's data plane applies, and the agent client some of them use.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    set: Sabotages,
    agent: Option<AgentClient>,
}

impl Hooks {
    /// Hooks applying `set`, with no agent (`authorize-via-agent` then refuses every connection,
    /// the agent-down variants never trigger).
    pub fn new(set: Sabotages) -> Self {
        Self { set, agent: None }
    }

    /// The control plane's hooks: the client's set, and the client itself.
    pub(crate) fn from_client(client: &AgentClient) -> Self {
        Self {
            set: client.sabotage(),
            agent: Some(client.clone()),
        }
    }

    /// The sabotage set.
    pub fn set(&self) -> Sabotages {
        self.set
    }

    pub(crate) fn has(&self, s: Sabotage) -> bool {
        self.set.contains(s)
    }

    /// The hooks of the intention sets the control plane builds: the same set.
    pub(crate) fn authz(&self) -> AuthzHooks {
        AuthzHooks::new(self.set)
    }

    /// The snapshot the data plane serves from: none while the agent is failing
    /// (`fail-closed-agent-down`, `drop-state-on-error`), an allow-everything copy while it is
    /// unreachable (`fail-open-agent-down`), else `snap` itself.
    pub(crate) fn serving(snap: Arc<Snapshot>) -> Option<Arc<Snapshot>> {
        let h = &snap.hooks;
        let agent = h.agent.as_ref().map(|a| &a.hooks);
        let closed = h.has(Sabotage::FailClosedAgentDown) || h.has(Sabotage::DropStateOnError);
        if closed && agent.is_some_and(|a| a.failing()) {
            return None;
        }
        if h.has(Sabotage::FailOpenAgentDown) && agent.is_some_and(|a| a.unreachable()) {
            let mut open = (*snap).clone();
            open.intentions = Arc::new(IntentionSet::new(&snap.service, Vec::new()));
            open.default_policy = DefaultPolicy::ALLOW;
            return Some(Arc::new(open));
        }
        Some(snap)
    }

    /// The peer's identity under `authorize-by-cn` (a Subject CN names the service) or
    /// `accept-any-trusted-cert` (no service SPIFFE ID: the service `unknown`), or its refusal
    /// under `require-ca-spiffe-san` (a CA certificate in its chain without a SPIFFE URI SAN);
    /// `None` = the normal rules.
    pub(crate) fn identify(
        &self,
        chain: &[CertificateDer<'_>],
        snap: &Snapshot,
    ) -> Option<Result<ServiceId, String>> {
        let leaf = chain.first()?;
        if let Some(problem) = chain::ca_san_problem(chain, self.set) {
            return Some(Err(problem));
        }
        let as_service = |service: String| ServiceId {
            trust_domain: snap.roots.trust_domain.clone(),
            partition: "default".into(),
            namespace: "default".into(),
            datacenter: snap.datacenter.clone(),
            service,
        };
        if self.has(Sabotage::AuthorizeByCn)
            && let Some(cn) = common_name(leaf)
        {
            return Some(Ok(as_service(cn)));
        }
        if self.has(Sabotage::AcceptAnyTrustedCert)
            && service_id_of_cert(leaf, snap.knobs.verify_spiffe_uri).is_err()
        {
            return Some(Ok(as_service("unknown".into())));
        }
        None
    }

    /// The L4 decision for a new connection: under `authorize-via-agent` the agent's answer to
    /// `POST /v1/agent/connect/authorize` (an error refuses), else `local`.
    pub(crate) async fn l4_decision(
        &self,
        snap: &Snapshot,
        chain: &[CertificateDer<'_>],
        id: &ServiceId,
        local: Decision,
    ) -> Decision {
        if !self.has(Sabotage::AuthorizeViaAgent) {
            return local;
        }
        let refused = |reason: String| Decision {
            allowed: false,
            reason,
        };
        let Some(client) = &self.agent else {
            return refused("authz call failed: no agent client".into());
        };
        let serial = chain.first().map(|c| serial_hex(c)).unwrap_or_default();
        let uri = id.to_string();
        let timeout = snap.knobs.handshake_timeout;
        match agent::authorize(client, &snap.service, &uri, &serial, timeout).await {
            Ok((allowed, reason)) => Decision { allowed, reason },
            Err(e) => refused(format!("authz call failed: {e}")),
        }
    }

    /// `jwt-skip-verify`, `jwt-ignore-claims`, `jwt-stale-jwks`, `jwt-no-forward-payload`,
    /// `jwt-forward-spoofable`: how token checks and payload forwarding are weakened.
    pub(crate) fn jwt_weakened(&self) -> crate::jwt::Weakened {
        crate::jwt::Weakened {
            skip_verify: self.has(Sabotage::JwtSkipVerify),
            ignore_claims: self.has(Sabotage::JwtIgnoreClaims),
            stale_jwks: self.has(Sabotage::JwtStaleJwks),
            no_forward_payload: self.has(Sabotage::JwtNoForwardPayload),
            forward_spoofable: self.has(Sabotage::JwtForwardSpoofable),
        }
    }

    /// `ignore-mesh-entry`: the entry is dropped as if none existed.
    pub(crate) fn mesh_entry(&self, read: Option<MeshEntry>) -> Option<MeshEntry> {
        if self.has(Sabotage::IgnoreMeshEntry) {
            None
        } else {
            read
        }
    }

    /// `ignore-outgoing-tls-bounds`: upstream connections at TLS 1.2-1.3 with every suite.
    pub(crate) fn tls_outgoing<'a>(&self, configured: &'a TlsBounds) -> &'a TlsBounds {
        static NO_BOUNDS: TlsBounds = TlsBounds {
            min: None,
            max: None,
            cipher_suites: Vec::new(),
        };
        if self.has(Sabotage::IgnoreOutgoingTlsBounds) {
            &NO_BOUNDS
        } else {
            configured
        }
    }

    /// `pass-spoofed-xfcc`: the application's XFCC goes out through upstream listeners.
    pub(crate) fn keep_app_xfcc(&self) -> bool {
        self.has(Sabotage::PassSpoofedXfcc)
    }

    /// `raw-path-authz`: no normalization at all (the path is matched and forwarded as sent).
    pub(crate) fn path_normalization(&self, configured: PathNormalization) -> PathNormalization {
        if self.has(Sabotage::RawPathAuthz) {
            PathNormalization {
                normalize_path: false,
                merge_slashes: false,
                escaped_slashes: EscapedSlashes::KeepUnchanged,
            }
        } else {
            configured
        }
    }

    /// `authorize-per-connection`: the first request's decision (kept in `conn`) for every
    /// request of the connection.
    pub(crate) fn request_decision(&self, conn: &PerConnection, d: Decision) -> Decision {
        if self.has(Sabotage::AuthorizePerConnection) {
            conn.first_decision.get_or_init(|| d).clone()
        } else {
            d
        }
    }

    /// `drop-trailers`: `body` without its trailers (the trailers frame becomes an empty data
    /// frame, so the stream still ends where it did).
    pub(crate) fn response_body(&self, body: Body) -> Body {
        use http_body_util::BodyExt;
        if !self.has(Sabotage::DropTrailers) {
            return body;
        }
        body.map_frame(|f| {
            if f.is_trailers() {
                hyper::body::Frame::data(bytes::Bytes::new())
            } else {
                f
            }
        })
        .boxed()
    }

    /// Inbound TLS with `skip-expiry-check` / `serve-self-signed` / `roots-only-verification`.
    pub(crate) fn inbound_tls(
        &self,
        tls: InboundTls,
        snap: &Snapshot,
    ) -> Result<InboundTls, TlsError> {
        tls::inbound(tls, snap, self.set)
    }

    /// `reject-hostname-endpoints`: only the endpoints whose host parses as an IP address.
    pub(crate) fn endpoints(&self, endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
        let mut endpoints = endpoints;
        if self.has(Sabotage::Ipv6Unbracketed) {
            // `host:port` joined as text and parsed again: `::1:20000` is no address, so the
            // IPv6 endpoint is dropped.
            endpoints.retain(|e| {
                !e.host.contains(':')
                    || format!("{}:{}", e.host, e.port)
                        .parse::<std::net::SocketAddr>()
                        .is_ok()
            });
        }
        if !self.has(Sabotage::RejectHostnameEndpoints) {
            return endpoints;
        }
        endpoints
            .into_iter()
            .filter(|e| e.host.parse::<IpAddr>().is_ok())
            .collect()
    }

    /// `ignore-inbound-limit` / `ignore-local-timeouts`: the knobs of a proxy that does not
    /// implement those keys.
    pub(crate) fn knobs(&self, mut knobs: Knobs) -> Knobs {
        if self.has(Sabotage::IgnoreInboundLimit) {
            knobs.max_inbound_connections = None;
        }
        if self.has(Sabotage::IgnoreLocalTimeouts) {
            knobs.local_connect_timeout = std::time::Duration::from_secs(600);
            knobs.local_request_timeout = None;
        }
        knobs
    }

    /// `ignore-app-socket`: the local app as a proxy without socket support sees it.
    pub(crate) fn local_app(&self, app: LocalApp, proxy: &AgentProxy) -> LocalApp {
        if self.has(Sabotage::Ipv6Unbracketed)
            && let LocalApp::Tcp(addr) = &app
            && addr.is_ipv6()
        {
            // `::1:9090` does not parse: the proxy falls back on 127.0.0.1.
            let text = format!("{}:{}", addr.ip(), addr.port());
            let ip = text
                .parse::<std::net::SocketAddr>()
                .map_or(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), |a| a.ip());
            return LocalApp::Tcp(std::net::SocketAddr::new(ip, addr.port()));
        }
        if !self.has(Sabotage::IgnoreAppSocket) {
            return app;
        }
        let ip = proxy
            .local_service_address
            .parse()
            .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));
        LocalApp::Tcp(std::net::SocketAddr::new(ip, proxy.local_service_port))
    }

    /// Outbound TLS with `no-client-cert` / `skip-upstream-identity` /
    /// `roots-only-verification`.
    pub(crate) fn outbound_tls(
        &self,
        config: Arc<ClientConfig>,
        roots: &TrustRoots,
        expected: &ExpectedServer,
    ) -> Arc<ClientConfig> {
        tls::outbound(config, roots, expected, self.set)
    }

    /// The leaf the control plane installs (`p256-only`, `leaf-without-chain`); `None` = keep
    /// the previous one.
    pub(crate) fn leaf(&self, leaf: Leaf) -> Option<Leaf> {
        chain::leaf(leaf, self.set)
    }

    /// Whether a root the agent lists is loaded (`p256-only` drops non-P-256 roots).
    pub(crate) fn root_usable(&self, pem: &str) -> bool {
        chain::root_usable(pem, self.set)
    }
}

fn common_name(der: &CertificateDer<'_>) -> Option<String> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    let cn = cert.subject().iter_common_name().next()?.as_str().ok()?;
    (!cn.is_empty()).then(|| cn.to_owned())
}

/// The serial number in Consul's colon-separated hex.
fn serial_hex(der: &CertificateDer<'_>) -> String {
    X509Certificate::from_der(der)
        .map(|(_, c)| {
            let hex: Vec<String> = c.raw_serial().iter().map(|b| format!("{b:02x}")).collect();
            hex.join(":")
        })
        .unwrap_or_default()
}
