//! Transparent-mode assembly: the outbound listener from `Proxy.Mode`/`Proxy.TransparentProxy`,
//! the implicit upstreams (from intentions, `crate::agent::implicit`) beside the registration's,
//! an upstream's virtual IPs (chain `AutoVirtualIPs`/`ManualVirtualIPs`, `consul-virtual` tagged
//! addresses of its targets' instances) and an instance's `DialedDirectly`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::{State, UpstreamSpec, upstream_specs};
use crate::agent::implicit::implicit_upstreams;
use crate::agent::types::{AgentProxy, AgentService, CompiledChain, HealthEntry};
use crate::snapshot::{Bind, Transparent};

impl State {
    /// Every upstream of the proxy: the registration's, then, in transparent mode, the implicit
    /// ones its intentions allow that the registration does not list (Consul: an explicit
    /// upstream keeps its own listener and gets no filter chain on the outbound listener).
    pub(crate) fn specs(&self, svc: &AgentService) -> Vec<UpstreamSpec> {
        let mut specs = upstream_specs(svc);
        let Some(proxy) = svc.proxy.as_ref().filter(|p| p.mode == "transparent") else {
            return specs;
        };
        let Some(policy) = self.policy else {
            return specs;
        };
        let names = implicit_upstreams(
            &proxy.destination_service_name,
            self.source_intentions.as_deref().unwrap_or_default(),
            self.catalog.as_deref().unwrap_or_default(),
            policy.allow,
        );
        let implicit: Vec<UpstreamSpec> = self
            .hooks
            .implicit_upstreams(names)
            .into_iter()
            .filter(|n| !specs.iter().any(|s| !s.query && s.name == *n))
            .map(|name| UpstreamSpec {
                name,
                namespace: "default".into(),
                datacenter: String::new(),
                bind: Bind::Implicit,
                protocol: None,
                config: serde_json::Map::new(),
                query: false,
            })
            .collect();
        specs.extend(implicit);
        specs
    }
}

/// Consul's default `TransparentProxy.OutboundListenerPort`.
pub(crate) const DEFAULT_OUTBOUND_PORT: u16 = 15001;

/// The tagged address holding a service's virtual IP.
pub(crate) const VIRTUAL_TAG: &str = "consul-virtual";

/// The outbound listener when the registration is in transparent mode (`127.0.0.1`, port from
/// `TransparentProxy.OutboundListenerPort`, 0/absent = 15001) and whether `MutualTLSMode` is
/// `permissive`; `None` for `""`/`direct` (Consul adds the plaintext chain in transparent mode
/// only: golden `connect-proxy-without-tproxy-and-permissive-mtls` has none).
pub(crate) fn transparent(proxy: &AgentProxy) -> Option<Transparent> {
    if proxy.mode != "transparent" {
        return None;
    }
    let port = proxy
        .transparent_proxy
        .map(|t| t.outbound_listener_port)
        .filter(|p| *p != 0)
        .unwrap_or(DEFAULT_OUTBOUND_PORT);
    Some(Transparent {
        outbound: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
        permissive: proxy.mutual_tls_mode == "permissive",
    })
}

/// Whether the instance's sidecar lets clients dial it directly.
pub(crate) fn dialed_directly(e: &HealthEntry) -> bool {
    e.service
        .proxy
        .as_ref()
        .and_then(|p| p.transparent_proxy)
        .is_some_and(|t| t.dialed_directly)
}

fn push(out: &mut Vec<IpAddr>, s: &str) {
    match s.trim().parse::<IpAddr>() {
        Ok(ip) => {
            let ip = ip.to_canonical();
            if !out.contains(&ip) {
                out.push(ip);
            }
        }
        Err(_) if s.is_empty() => {}
        Err(_) => tracing::debug!(address = s, "virtual IP is not an IP address; ignored"),
    }
}

/// An upstream's virtual IPs, deduplicated: the chain's auto then manual ones, then the
/// `consul-virtual` addresses of the instances of its targets (`entries`, in target order).
pub(crate) fn virtual_ips<'a>(
    chain: Option<&CompiledChain>,
    entries: impl IntoIterator<Item = &'a HealthEntry>,
) -> Vec<IpAddr> {
    let mut out = Vec::new();
    if let Some(chain) = chain {
        for ip in chain
            .auto_virtual_ips
            .iter()
            .chain(&chain.manual_virtual_ips)
        {
            push(&mut out, ip);
        }
    }
    for e in entries {
        if let Some(tagged) = e.service.tagged_addresses.get(VIRTUAL_TAG) {
            push(&mut out, &tagged.address);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::types::{AgentService, ChainResponse};

    fn proxy(v: &serde_json::Value) -> AgentProxy {
        serde_json::from_value::<AgentService>(json!({ "Proxy": v }))
            .unwrap()
            .proxy
            .unwrap()
    }

    #[test]
    fn permissive_only_with_the_mode_in_transparent_mode() {
        let p = |v: serde_json::Value| transparent(&proxy(&v)).map(|t| t.permissive);
        assert_eq!(p(json!({"MutualTLSMode": "permissive"})), None);
        assert_eq!(p(json!({"Mode": "transparent"})), Some(false));
        assert_eq!(
            p(json!({"Mode": "transparent", "MutualTLSMode": "strict"})),
            Some(false)
        );
        assert_eq!(
            p(json!({"Mode": "transparent", "MutualTLSMode": "permissive"})),
            Some(true)
        );
    }

    #[test]
    fn the_outbound_listener_follows_mode_and_port() {
        let t = |v: serde_json::Value| transparent(&proxy(&v)).map(|t| t.outbound.to_string());
        assert_eq!(t(json!({})), None);
        assert_eq!(t(json!({"Mode": "direct"})), None);
        assert_eq!(
            t(json!({"Mode": "", "TransparentProxy": {"OutboundListenerPort": 15001}})),
            None,
            "a port without the mode is not transparent mode"
        );
        assert_eq!(
            t(json!({"Mode": "transparent"})).as_deref(),
            Some("127.0.0.1:15001")
        );
        assert_eq!(
            t(json!({"Mode": "transparent", "TransparentProxy": {}})).as_deref(),
            Some("127.0.0.1:15001")
        );
        assert_eq!(
            t(json!({"Mode": "transparent", "TransparentProxy": {"OutboundListenerPort": 16001}}))
                .as_deref(),
            Some("127.0.0.1:16001")
        );
    }

    #[test]
    fn virtual_ips_from_chain_then_entries_deduplicated() {
        let chain = serde_json::from_value::<ChainResponse>(json!({"Chain": {
            "AutoVirtualIPs": ["240.0.0.1"], "ManualVirtualIPs": ["10.9.0.1", "nope"]}}))
        .unwrap()
        .chain;
        let entries: Vec<HealthEntry> = serde_json::from_value(json!([
            {"Service": {"Port": 1, "TaggedAddresses": {"consul-virtual": {"Address": "240.0.0.1", "Port": 1}}}},
            {"Service": {"Port": 2, "TaggedAddresses": {"consul-virtual": {"Address": "240.0.0.7", "Port": 2}}}},
            {"Service": {"Port": 3, "TaggedAddresses": {"lan_ipv4": {"Address": "10.0.0.3", "Port": 3}}}},
            {"Service": {"Port": 4, "TaggedAddresses": null,
                         "Proxy": {"TransparentProxy": {"DialedDirectly": true}}}}
        ]))
        .unwrap();
        let got: Vec<String> = virtual_ips(Some(&chain), &entries)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(got, ["240.0.0.1", "10.9.0.1", "240.0.0.7"]);
        assert!(virtual_ips(None, &[]).is_empty());
        let dd: Vec<bool> = entries.iter().map(dialed_directly).collect();
        assert_eq!(dd, [false, false, false, true]);
    }
}
