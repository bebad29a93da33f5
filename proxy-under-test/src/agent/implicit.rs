//! Transparent mode's implicit upstreams, derived as Consul's servers derive them for their own
//! proxies (`IntentionTopology` in `agent/consul/state/intention.go`, fed to
//! `agent/proxycfg/connect_proxy.go` as `IntentionUpstreams`): every candidate service other
//! than the proxy's own and `consul` that the proxy's service may reach by its source
//! intentions, or by the default policy when none matches. A proxy on the HTTP API sees the
//! candidates as the catalog's service names (`/v1/catalog/services`) plus the exact
//! destinations its source intentions name (`/v1/connect/intentions/match?by=source`); Consul
//! also counts services known only by their virtual IP, which no HTTP endpoint lists, so under
//! a default allow such a service is found only once an intention names it.

use std::collections::BTreeSet;

use crate::authz::{Intention, precedence};

/// The implicit upstreams of `source`, sorted by name: each candidate whose first matching
/// source intention (by precedence; deny before allow at equal precedence) allows it, an L7
/// intention counting as allowed (`AllowPermissions`), else `default_allow`.
pub(crate) fn implicit_upstreams(
    source: &str,
    by_source: &[Intention],
    catalog: &[String],
    default_allow: bool,
) -> Vec<String> {
    let mut rules: Vec<&Intention> = by_source
        .iter()
        .filter(|i| i.source_peer.is_empty() && i.source_sameness_group.is_empty())
        .filter(|i| i.source_name == source || i.source_name == "*")
        .collect();
    rules.sort_by_key(|i| {
        (
            std::cmp::Reverse(precedence(i)),
            i.action.eq_ignore_ascii_case("allow"),
        )
    });
    let named = by_source
        .iter()
        .map(|i| i.destination_name.as_str())
        .filter(|d| *d != "*");
    let candidates: BTreeSet<&str> = catalog
        .iter()
        .map(String::as_str)
        .chain(named)
        .filter(|c| !c.is_empty() && *c != source && *c != "consul")
        .collect();
    candidates
        .into_iter()
        .filter(|c| {
            rules
                .iter()
                .find(|i| i.destination_name == *c || i.destination_name == "*")
                .map_or(default_allow, |i| {
                    !i.permissions.is_empty() || i.action.eq_ignore_ascii_case("allow")
                })
        })
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::Permission;

    fn l4(src: &str, dst: &str, allow: bool) -> Intention {
        Intention::l4(src, dst, allow)
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn allowed_destinations_under_a_default_deny() {
        let ixns = [l4("db", "cache", true), l4("db", "api", false)];
        let catalog = names(&["db", "db-sidecar-proxy", "api", "web", "consul"]);
        // cache is named by an intention only (known to the catalog by its sidecar alone).
        assert_eq!(implicit_upstreams("db", &ixns, &catalog, false), ["cache"]);
    }

    #[test]
    fn the_default_and_wildcards_decide_by_precedence() {
        let catalog = names(&["db", "api", "web", "queue"]);
        // Default allow: everything but the denied one, the source itself and consul.
        let deny_api = [l4("db", "api", false)];
        assert_eq!(
            implicit_upstreams("db", &deny_api, &catalog, true),
            ["queue", "web"]
        );
        // `db -> *` deny (6) loses to `* -> web` allow (8) and `db -> queue` allow (9).
        let ixns = [
            l4("db", "*", false),
            l4("*", "web", true),
            l4("db", "queue", true),
        ];
        assert_eq!(
            implicit_upstreams("db", &ixns, &catalog, true),
            ["queue", "web"]
        );
        // Another source's intentions never count.
        let other = [l4("web", "api", true)];
        assert!(implicit_upstreams("db", &other, &catalog, false).is_empty());
    }

    #[test]
    fn an_l7_intention_counts_as_reachable() {
        let l7 = Intention::l7(
            "db",
            "api",
            vec![Permission {
                action: "deny".into(),
                http: None,
                jwt: None,
            }],
        );
        assert_eq!(implicit_upstreams("db", &[l7], &[], false), ["api"]);
    }
}
