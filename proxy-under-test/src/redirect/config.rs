//! What to install: [`RedirectConfig`] (proxy UID, listener ports, exclusions), CIDR parsing,
//! and the port derivation from a sidecar registration, as Consul's redirect-traffic does it.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::RedirectError;
use crate::agent::types::null_default;

/// Consul's default outbound listener port (`iptables.DefaultTProxyOutboundPort`).
pub const DEFAULT_OUTBOUND_PORT: u16 = 15001;

/// An IPv4 or IPv6 address with an optional prefix length (`10.0.0.0/8`, `1.1.1.1`, `fd00::/8`),
/// rendered as given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    /// The address as written (not masked).
    pub addr: IpAddr,
    /// The prefix length, if written.
    pub prefix: Option<u8>,
}

impl Cidr {
    /// Whether this is an IPv4 CIDR (the only family the rules cover).
    pub fn is_ipv4(&self) -> bool {
        self.addr.is_ipv4()
    }
}

impl FromStr for Cidr {
    type Err = RedirectError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| RedirectError::BadFlag(format!("invalid CIDR {s:?}: {why}"));
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| bad("not an IP address"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => None,
            Some(p) => {
                // Digits only: `u8::from_str` would also take "+8".
                if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(bad("the prefix length is not a number"));
                }
                match p.parse::<u8>() {
                    Ok(n) if n <= max => Some(n),
                    _ => return Err(bad(&format!("the prefix length must be 0..={max}"))),
                }
            }
        };
        Ok(Self { addr, prefix })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.prefix {
            Some(p) => write!(f, "{}/{p}", self.addr),
            None => write!(f, "{}", self.addr),
        }
    }
}

/// Traffic left alone, in the order given (each becomes one inserted `RETURN` rule).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exclusions {
    /// Destination ports of inbound TCP not sent to the inbound listener.
    pub inbound_ports: Vec<u16>,
    /// Destination ports of outbound TCP not sent to the outbound listener.
    pub outbound_ports: Vec<u16>,
    /// Destinations of outbound TCP not sent to the outbound listener.
    pub outbound_cidrs: Vec<Cidr>,
    /// Further UIDs whose outbound TCP is not redirected (like the proxy's).
    pub uids: Vec<u32>,
}

/// Everything [`super::rules`] needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedirectConfig {
    /// The UID the proxy runs as: its own connections are never redirected.
    pub proxy_uid: u32,
    /// The proxy's public (inbound) listener port.
    pub inbound_port: u16,
    /// The proxy's outbound listener port ([`DEFAULT_OUTBOUND_PORT`] by default).
    pub outbound_port: u16,
    /// What is left alone.
    pub exclude: Exclusions,
    /// Tag added as `-m comment --comment TAG` to every rule (letters, digits, `._:/-`).
    pub comment: Option<String>,
}

impl RedirectConfig {
    /// Redirect to `inbound_port` and the default outbound port, nothing excluded.
    pub fn new(proxy_uid: u32, inbound_port: u16) -> Self {
        Self {
            proxy_uid,
            inbound_port,
            outbound_port: DEFAULT_OUTBOUND_PORT,
            exclude: Exclusions::default(),
            comment: None,
        }
    }

    /// Sets the outbound listener port.
    pub fn with_outbound_port(mut self, port: u16) -> Self {
        self.outbound_port = port;
        self
    }

    /// Sets the exclusions.
    pub fn with_exclusions(mut self, exclude: Exclusions) -> Self {
        self.exclude = exclude;
        self
    }

    /// Sets the comment tag.
    pub fn with_comment(mut self, comment: impl Into<String>) -> Self {
        self.comment = Some(comment.into());
        self
    }

    /// Derives the ports from an AgentService (`GET /v1/agent/service/:id`) like Consul:
    /// inbound = `Port`, or `Proxy.Config.bind_port` when set; outbound =
    /// `Proxy.TransparentProxy.OutboundListenerPort`, or 15001; excluded from inbound
    /// redirection, in this order: the ports of `envoy_prometheus_bind_addr`,
    /// `envoy_stats_bind_addr` and `metrics_bind_addr`, every `Expose.Paths[].ListenerPort`,
    /// then `extra.inbound_ports`. The other exclusions are `extra`'s.
    ///
    /// Like Consul, any service with a `Proxy` block is accepted, whatever its `Proxy.Mode`.
    pub fn from_registration(
        service: &Value,
        proxy_uid: u32,
        extra: Exclusions,
    ) -> Result<Self, RedirectError> {
        let reg = Registration::deserialize(service).map_err(|e| {
            RedirectError::BadRegistration(format!("cannot read the registration: {e}"))
        })?;
        let Some(proxy) = reg.proxy else {
            return Err(RedirectError::BadRegistration(format!(
                "service {} is not a proxy service",
                reg.id
            )));
        };
        let config_err =
            |e: String| RedirectError::BadRegistration(format!("failed parsing Proxy.Config: {e}"));
        let mut inbound_port = reg.port;
        if let Some(bind) = weak_port(&proxy.config, "bind_port").map_err(config_err)? {
            inbound_port = bind;
        }
        let outbound_port = proxy
            .transparent_proxy
            .map(|t| t.outbound_listener_port)
            .filter(|p| *p != 0)
            .unwrap_or(DEFAULT_OUTBOUND_PORT);
        let mut inbound_ports = Vec::new();
        for key in [
            "envoy_prometheus_bind_addr",
            "envoy_stats_bind_addr",
            "metrics_bind_addr",
        ] {
            if let Some(port) = addr_port(&proxy.config, key)? {
                inbound_ports.push(port);
            }
        }
        inbound_ports.extend(
            proxy
                .expose
                .paths
                .iter()
                .map(|p| p.listener_port)
                .filter(|p| *p != 0),
        );
        inbound_ports.extend(extra.inbound_ports);
        let config = Self {
            proxy_uid,
            inbound_port,
            outbound_port,
            exclude: Exclusions {
                inbound_ports,
                ..extra
            },
            comment: None,
        };
        if config.inbound_port == 0 {
            return Err(RedirectError::BadRegistration(format!(
                "service {} has no Port (nor Proxy.Config.bind_port): ProxyInboundPort is required to set up traffic redirection",
                reg.id
            )));
        }
        Ok(config)
    }

    /// Checks what the types cannot: non-zero listener ports, the comment's characters.
    pub fn validate(&self) -> Result<(), RedirectError> {
        if self.inbound_port == 0 {
            return Err(RedirectError::BadFlag(
                "the inbound port is required to set up traffic redirection".into(),
            ));
        }
        if self.outbound_port == 0 {
            return Err(RedirectError::BadFlag(
                "the outbound port cannot be 0".into(),
            ));
        }
        if let Some(c) = &self.comment {
            let ok = !c.is_empty()
                && c.len() <= 200
                && c.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._:/-".contains(&b));
            if !ok {
                return Err(RedirectError::BadFlag(format!(
                    "invalid comment {c:?}: use 1 to 200 letters, digits or ._:/-"
                )));
            }
        }
        Ok(())
    }
}

/// `Proxy.Config[key]` as a port, decoded weakly like mapstructure: a number or a numeric
/// string; absent, `null`, 0 or `""` mean unset.
fn weak_port(config: &Map<String, Value>, key: &str) -> Result<Option<u16>, String> {
    let bad = |v: &Value| format!("'{key}' expected a port number, got {v}");
    match config.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(0) => Ok(None),
            Some(p) => u16::try_from(p)
                .map(Some)
                .map_err(|_| bad(&Value::Number(n.clone()))),
            None => Err(bad(&Value::Number(n.clone()))),
        },
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(v @ Value::String(s)) => match s.trim().parse::<u16>() {
            Ok(0) => Ok(None),
            Ok(p) => Ok(Some(p)),
            Err(_) => Err(bad(v)),
        },
        Some(v) => Err(bad(v)),
    }
}

/// The port of the `host:port` in `Proxy.Config[key]` (absent or `""`: none), with Consul's
/// error text when it is not a `host:port`.
fn addr_port(config: &Map<String, Value>, key: &str) -> Result<Option<u16>, RedirectError> {
    let bad = |why: String| {
        RedirectError::BadRegistration(format!("failed parsing host and port from {key}: {why}"))
    };
    let s = match config.get(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) if s.is_empty() => return Ok(None),
        Some(Value::String(s)) => s,
        Some(v) => return Err(bad(format!("expected a string, got {v}"))),
    };
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(Some(a.port()));
    }
    // A host name (`localhost:9102`) or an empty host (`:9102`).
    match s.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => port
            .parse::<u16>()
            .map(Some)
            .map_err(|_| bad(format!("invalid port in {s:?}"))),
        _ => Err(bad(format!("address {s}: missing port in address"))),
    }
}

/// The parts of an AgentService redirect-traffic reads.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Registration {
    #[serde(rename = "ID", default)]
    id: String,
    #[serde(default)]
    port: u16,
    #[serde(default)]
    proxy: Option<RegProxy>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RegProxy {
    #[serde(default, deserialize_with = "null_default")]
    config: Map<String, Value>,
    #[serde(default)]
    transparent_proxy: Option<RegTransparent>,
    #[serde(default, deserialize_with = "null_default")]
    expose: RegExpose,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RegTransparent {
    #[serde(default)]
    outbound_listener_port: u16,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RegExpose {
    #[serde(default, deserialize_with = "null_default")]
    paths: Vec<RegExposePath>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RegExposePath {
    #[serde(default)]
    listener_port: u16,
}
