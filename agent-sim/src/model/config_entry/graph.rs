//! Cross-entry validation (`validateProposedConfigEntryInServiceGraph`): a write or delete is
//! rejected when some affected discovery chain would fail to compile (inconsistent protocols,
//! routing/splitting on a non-L7 protocol, missing subsets, redirect loops) or an L7 intention's
//! destination would not speak HTTP. The chain walk mirrors the compiler's order of checks without
//! building the compiled chain itself.

mod compiler;

use std::collections::{BTreeMap, BTreeSet};

use super::proxy_defaults::weak_protocol;
use super::store::ConfigEntries;
use super::{ConfigEntry, Kind, ServiceIntentions, go_quote};
use compiler::Compiler;

/// http, http2 and grpc allow routing, splitting and L7 intentions.
pub(crate) fn is_http_like(protocol: &str) -> bool {
    matches!(protocol, "http" | "http2" | "grpc")
}

/// `recordServiceProtocol`: service-defaults decides when present, else proxy-defaults.
pub(crate) fn protocol_in<'a>(
    get: impl Fn(Kind, &str) -> Option<&'a ConfigEntry>,
    service: &str,
) -> String {
    let proto = match get(Kind::ServiceDefaults, service) {
        Some(ConfigEntry::ServiceDefaults(sd)) => sd.protocol.clone(),
        _ => match get(Kind::ProxyDefaults, "global") {
            // Errors are ignored here: the compiler falls back to the default.
            Some(ConfigEntry::ProxyDefaults(pd)) => {
                weak_protocol(pd.config.as_ref()).unwrap_or_default()
            }
            _ => String::new(),
        },
    };
    if proto.is_empty() {
        "tcp".into()
    } else {
        proto.to_lowercase()
    }
}

/// Checks what a proposed write (`new = Some`) or delete (`new = None`) of `kind`/`name` does to
/// the service graph.
pub(crate) fn validate_proposed<'s>(
    store: &'s ConfigEntries,
    kind: Kind,
    name: &str,
    new: Option<&'s ConfigEntry>,
) -> Result<(), String> {
    let own_name = name.to_owned();
    let view = move |k: Kind, n: &str| -> Option<&'s ConfigEntry> {
        if k == kind && n == own_name {
            new
        } else {
            store.get(k, n)
        }
    };
    let all_intentions = || -> Vec<ServiceIntentions> {
        let mut v: Vec<ServiceIntentions> = store
            .intentions()
            .filter(|i| !(kind == Kind::ServiceIntentions && i.name == name))
            .cloned()
            .collect();
        if let Some(ConfigEntry::ServiceIntentions(i)) = new {
            v.push(i.clone());
        }
        v
    };
    if kind == Kind::JwtProvider {
        // Providers take no part in discovery chains.
        return Ok(());
    }
    if kind == Kind::Mesh {
        // "Exported services and mesh config do not influence discovery chains."
        return Ok(());
    }
    let mut chains: BTreeSet<String> = BTreeSet::new();
    let intentions: Vec<ServiceIntentions> = match kind {
        Kind::ServiceIntentions => match new {
            Some(ConfigEntry::ServiceIntentions(i)) => vec![i.clone()],
            _ => return Ok(()),
        },
        Kind::ProxyDefaults => {
            for k in [
                Kind::ServiceRouter,
                Kind::ServiceSplitter,
                Kind::ServiceResolver,
            ] {
                chains.extend(store.list(k).into_iter().map(|e| e.name().to_owned()));
            }
            all_intentions()
        }
        _ => {
            chains.insert(name.to_owned());
            for k in [
                Kind::ServiceRouter,
                Kind::ServiceSplitter,
                Kind::ServiceResolver,
            ] {
                for e in store.list(k) {
                    if related_services(e).iter().any(|s| s == name) {
                        chains.insert(e.name().to_owned());
                    }
                }
            }
            all_intentions()
        }
    };
    chains.extend(intentions.iter().map(|i| i.name.clone()));
    let mut protocols = BTreeMap::new();
    for chain in &chains {
        let proto = Compiler::new(&view, chain).compile()?;
        protocols.insert(chain.clone(), proto);
    }
    for ixn in &intentions {
        if ixn.has_wildcard_destination() || !ixn.has_any_permissions() {
            continue;
        }
        let proto = protocols.get(&ixn.name).map_or("tcp", String::as_str);
        if !is_http_like(proto) {
            return Err(format!(
                "service {} has protocol {}, which is incompatible with L7 intentions permissions",
                go_quote(&ixn.name),
                go_quote(proto)
            ));
        }
    }
    Ok(())
}

/// `ListRelatedServices`: other services a router, splitter or resolver points at.
fn related_services(e: &ConfigEntry) -> Vec<String> {
    let own = e.name();
    let pick = |s: &str| {
        if s.is_empty() {
            own.to_owned()
        } else {
            s.to_owned()
        }
    };
    let mut out: Vec<String> = match e {
        ConfigEntry::ServiceRouter(r) => r
            .routes
            .iter()
            .flatten()
            .filter_map(|rt| rt.destination.as_ref())
            .map(|d| pick(&d.service))
            .collect(),
        ConfigEntry::ServiceSplitter(s) => s.splits.iter().map(|sp| pick(&sp.service)).collect(),
        ConfigEntry::ServiceResolver(r) => {
            let mut v: Vec<String> = r.redirect.iter().map(|rd| pick(&rd.service)).collect();
            for f in r.failover.values() {
                if f.targets.is_empty() {
                    v.push(pick(&f.service));
                } else {
                    v.extend(
                        f.targets
                            .iter()
                            .filter(|t| t.peer.is_empty())
                            .map(|t| pick(&t.service)),
                    );
                }
            }
            v
        }
        _ => Vec::new(),
    };
    out.retain(|s| s != own);
    out
}
