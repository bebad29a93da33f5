//! What a scenario sets up before the proxy starts: the sidecar registration (upstreams,
//! transparent mode, proxy config), the CA, intentions, config entries, harness-run instances,
//! the token's delivery, and the identities probes present.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Answer, db, yes};

/// The world before the proxy starts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setup {
    /// `acl.default_policy` (ACLs are always on). Default `deny`.
    #[serde(default)]
    pub acl_default_policy: Option<Policy>,
    /// The agent's `default_intention_policy`, when set.
    #[serde(default)]
    pub default_intention_policy: Option<Policy>,
    /// Leaf certificate TTL (Go duration), default Consul's 72h.
    #[serde(default)]
    pub leaf_ttl: Option<String>,
    /// Max delay before blocked leaf queries see a rotated root (Go duration). Default `0s`.
    #[serde(default)]
    pub ca_change_jitter: Option<String>,
    /// `db`'s protocol, written as a `service-defaults` entry when set (`tcp`, `http`, ...).
    #[serde(default)]
    pub protocol: Option<String>,
    /// Extra keys for the sidecar's `Proxy.Config` (the harness adds its timing knobs).
    #[serde(default)]
    pub proxy_config: BTreeMap<String, Value>,
    /// Upstreams of `db`'s sidecar.
    #[serde(default)]
    pub upstreams: Vec<UpstreamSpec>,
    /// Harness-run upstream instances, registered in the catalog on their own nodes.
    #[serde(default)]
    pub instances: Vec<InstanceSpec>,
    /// Intentions, shorthand for `service-intentions` entries.
    #[serde(default)]
    pub intentions: Vec<IntentionSpec>,
    /// Config entries in Consul's JSON shape (`Kind`, `Name`, ...).
    #[serde(default)]
    pub config_entries: Vec<Value>,
    /// Prepared queries in Consul's `POST /v1/query` shape (`Name`, `Service`, ...), created
    /// after the instances are registered.
    #[serde(default)]
    pub prepared_queries: Vec<Value>,
    /// How the proxy gets its ACL token.
    #[serde(default)]
    pub token: TokenDelivery,
    /// Transparent mode (`Proxy.Mode = "transparent"`): the harness runs the scenario in network
    /// namespaces of its own, installs the redirect rules and runs the proxy under its own UID.
    #[serde(default)]
    pub transparent: Option<TransparentSpec>,
    /// The application listens on a unix socket (`Proxy.LocalServiceSocketPath`) instead of a
    /// TCP port.
    #[serde(default)]
    pub app_socket: bool,
    /// The agent's CA at bootstrap (`[setup.ca]`): key kind and chain mode.
    #[serde(default)]
    pub ca: Option<CaSetup>,
    /// The proxy token's ACL rules (HCL or JSON, as a policy's `Rules`) instead of the harness's
    /// default ones, e.g. without `intentions:read`.
    #[serde(default)]
    pub token_rules: Option<String>,
    /// The proxy may never open its listeners (it fails closed): the steps run once its ports
    /// accept, or after `propagation` if they never do (no "proxy ready" failure).
    #[serde(default)]
    pub ready_optional: bool,
    /// The agent serves HTTPS (and gRPC over TLS) with a certificate of its own CA
    /// (`[setup.agent_tls]`); the proxy gets `CONSUL_HTTP_ADDR=https://...`, `CONSUL_CACERT`,
    /// `CONSUL_CLIENT_CERT`, `CONSUL_CLIENT_KEY` and `CONSUL_TLS_SERVER_NAME`.
    #[serde(default)]
    pub agent_tls: Option<AgentTlsSetup>,
    /// JWT providers the harness runs (`[[setup.jwt_providers]]`), written before the config
    /// entries.
    #[serde(default)]
    pub jwt_providers: Vec<super::JwtProviderSpec>,
    /// The app, the upstream instances and the sidecar's public listener on `::1` (the
    /// registrations' `Address`es are `::1`); graded only where the machine has IPv6 loopback.
    #[serde(default)]
    pub ipv6: bool,
}

/// `[setup.agent_tls]`: the agent's own TLS.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentTlsSetup {
    /// `tls.https.verify_incoming`: the HTTPS port requires the client certificate the proxy is
    /// handed.
    #[serde(default)]
    pub verify_incoming: bool,
}

/// Whose server certificate the agent presents (`agent-server-cert` step).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentCertCa {
    /// The agent CA's (the proxy was told to trust it).
    Agent,
    /// An unrelated CA's: an impostor agent, which a correct proxy refuses to talk to.
    Untrusted,
}

/// `[setup.ca]`: the CA the cluster bootstraps with.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaSetup {
    /// `PrivateKeyType`: `ec` (default) or `rsa`.
    #[serde(default)]
    pub key_type: Option<String>,
    /// `PrivateKeyBits`: `ec` 256 (default) or 384, `rsa` 2048 (default for rsa) or 4096.
    #[serde(default)]
    pub key_bits: Option<u32>,
    /// Leaves signed by an intermediate listed in the root's `IntermediateCerts` (as with Vault
    /// or in a secondary datacenter; simulator-only mode).
    #[serde(default)]
    pub intermediate: bool,
    /// Roots and intermediates without the `spiffe://<trust domain>` URI SAN, as some external
    /// providers issue them (the integration guide's "CA certificates may not have the correct
    /// trust-domain SPIFFE URI SAN"); leaves still carry their SPIFFE ID.
    #[serde(default)]
    pub without_spiffe_san: bool,
}

/// `allow` or `deny`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Allow.
    Allow,
    /// Deny.
    Deny,
}

/// How the token reaches the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TokenDelivery {
    /// `CONSUL_HTTP_TOKEN` (and `{token}` in the command template).
    #[default]
    Env,
    /// A file passed as `-token-file` (`{token_file}` in the template); the env variable is unset.
    File,
}

/// An upstream of the proxied service's sidecar.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamSpec {
    /// `DestinationName`.
    pub name: String,
    /// Present in the registration from the start (`false`: added later by an `add-upstream` step).
    #[serde(default = "yes")]
    pub initial: bool,
    /// Exposed on a unix socket (`LocalBindSocketPath`) instead of a TCP port.
    #[serde(default)]
    pub socket: bool,
    /// `LocalBindSocketMode` (octal text such as `"0600"`); only with `socket`.
    #[serde(default)]
    pub socket_mode: Option<String>,
    /// `DestinationType = "prepared_query"`: `name` is a prepared query (see
    /// `setup.prepared_queries`), which the proxy executes and re-polls.
    #[serde(default)]
    pub prepared_query: bool,
    /// Transparent mode's implicit upstream: not in the registration's `Upstreams` (so no
    /// local listener); the harness writes the intention `db -> name` allow, from which Consul
    /// derives it (`agent/proxycfg/connect_proxy.go`, `IntentionUpstreams`), and the app reaches
    /// it only by dialing its virtual IP.
    #[serde(default)]
    pub implicit: bool,
}

/// The transparent-mode part of the sidecar registration (`Proxy.TransparentProxy`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransparentSpec {
    /// `OutboundListenerPort` (Consul's default: 15001).
    #[serde(default)]
    pub outbound_port: Option<u16>,
    /// `DialedDirectly`.
    #[serde(default)]
    pub dialed_directly: bool,
    /// Traffic the redirect step leaves alone (`consul connect redirect-traffic`'s
    /// `-exclude-*` flags, for targets the harness sets up: see [`Exclusion`]).
    #[serde(default)]
    pub exclude: Vec<Exclusion>,
}

/// One kind of traffic the redirect step is told to leave alone. The harness makes a target
/// for each and passes its flag: `inbound-port` a plain TCP server in the pod
/// (`-exclude-inbound-port`, as for ssh), `outbound-port` a plain server outside the pod on
/// another port (`-exclude-outbound-port`), `outbound-cidr` one on another address
/// (`-exclude-outbound-cidr <address>/32`), `uid` another UID than the proxy's
/// (`-exclude-uid`), whose dials the harness makes from a process running as it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Exclusion {
    /// `-exclude-inbound-port`.
    InboundPort,
    /// `-exclude-outbound-port`.
    OutboundPort,
    /// `-exclude-outbound-cidr`.
    OutboundCidr,
    /// `-exclude-uid`.
    Uid,
}

/// A harness-run mTLS instance of some service, registered in the catalog as that service's
/// sidecar (`<service>-sidecar-proxy`, `Kind: connect-proxy`). It answers every connection with
/// its own id so probes can tell which instance they reached, and records the identity the
/// proxy presented.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstanceSpec {
    /// Unique instance id, e.g. `cache-1`.
    pub id: String,
    /// The service it is registered for, e.g. `cache`.
    pub service: String,
    /// The service whose leaf it presents (default: `service`); another name makes an impostor.
    #[serde(default)]
    pub identity: Option<String>,
    /// Initial health: `passing` (default), `warning` or `critical`.
    #[serde(default)]
    pub status: Option<String>,
    /// Register its address as this hostname instead of `127.0.0.1`.
    #[serde(default)]
    pub hostname: Option<String>,
    /// What it serves: `tcp` (default: one token line, answered with its id), or `http` /
    /// `http2` / `grpc` (HTTP/1.1 or HTTP/2 over mTLS, ALPN `h2` and `http/1.1`, answering gRPC
    /// calls with trailers and other requests with what they carried, as `answer` says; the
    /// service's protocol must then be set by a `service-defaults` entry).
    #[serde(default)]
    pub protocol: Option<String>,
    /// `Service.Meta` of its registration (what subset filters select on).
    #[serde(default)]
    pub meta: BTreeMap<String, String>,
    /// `Service.Tags` of its registration.
    #[serde(default)]
    pub tags: Vec<String>,
    /// How it answers HTTP requests (`http`, `http2`, `grpc`), and whether it accepts at all.
    #[serde(default)]
    pub answer: Answer,
    /// The only TLS version it speaks (`1.2` or `1.3`; default both): for the `mesh` entry's
    /// `TLS.Outgoing` floor and ceiling.
    #[serde(default)]
    pub tls_version: Option<String>,
    /// The only TLS 1.2 cipher suites it accepts (IANA names; default every one rustls has):
    /// for the `mesh` entry's `TLS.Outgoing.CipherSuites`.
    #[serde(default)]
    pub cipher_suites: Vec<String>,
}

/// An intention in shorthand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntentionSpec {
    /// Source service name or `*`.
    pub source: String,
    /// Destination service name or `*` (default `db`).
    #[serde(default = "db")]
    pub destination: String,
    /// `allow` or `deny` for an L4 intention.
    #[serde(default)]
    pub action: Option<Policy>,
    /// L7 `Permissions` in Consul's JSON shape.
    #[serde(default)]
    pub permissions: Option<Vec<Value>>,
}

/// Who a probe is: a leaf issued by the simulated CA for a service, a named identity issued
/// earlier (`issue` step), or a forged/absent certificate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Identity {
    /// A fresh leaf for `service` from the active root.
    Service {
        /// The service name.
        service: String,
    },
    /// An identity saved by an earlier `issue` step.
    Named {
        /// The name it was saved under.
        name: String,
    },
    /// A leaf from a CA the proxy must not trust.
    UntrustedCa {
        /// The service it claims.
        service: String,
    },
    /// A trusted-root leaf naming another trust domain.
    ForeignTrustDomain {
        /// The service it claims.
        service: String,
    },
    /// A trusted-root leaf whose validity has ended.
    Expired {
        /// The service it claims.
        service: String,
    },
    /// A trusted-root certificate without any URI SAN.
    NoSpiffe,
    /// A trusted-root certificate with an agent SPIFFE ID.
    AgentId,
    /// Subject CN says `common_name`, the URI SAN says `service`.
    CommonNameMismatch {
        /// The CN.
        common_name: String,
        /// The service in the URI SAN.
        service: String,
    },
    /// A self-signed certificate naming `service`.
    SelfSigned {
        /// The service it claims.
        service: String,
    },
    /// No client certificate at all.
    NoCert,
}
