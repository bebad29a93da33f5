//! The derived tables against a scan over random catalogs: the candidates, filtered by the
//! health query's predicate, are exactly what the scan finds, in the same order; the check IDs
//! are exactly the scan's.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

const NAMES: [&str; 3] = ["a", "b", "c"];
const NODES: [&str; 3] = ["n", "n1", "m"];

fn services() -> impl Strategy<Value = BTreeMap<NodeKey, NodeService>> {
    prop::collection::vec(
        (0..3usize, 0..6usize, 0..3usize, 0..3usize, 0..3usize),
        0..20,
    )
    .prop_map(|v| {
        v.into_iter()
            .map(|(node, id, name, kind, dest)| {
                let mut svc = NodeService {
                    id: format!("i{id}"),
                    service: NAMES[name].to_owned(),
                    ..NodeService::default()
                };
                match kind {
                    0 => {
                        svc.kind = ServiceKind::ConnectProxy;
                        svc.proxy.destination_service_name = NAMES[dest].to_owned();
                    }
                    1 => svc.connect.native = true,
                    _ => {}
                }
                ((NODES[node].to_owned(), svc.id.clone()), svc)
            })
            .collect()
    })
}

fn checks() -> impl Strategy<Value = BTreeMap<NodeKey, HealthCheck>> {
    prop::collection::vec((0..3usize, 0..8usize, prop::option::of(0..6usize)), 0..20).prop_map(
        |v| {
            v.into_iter()
                .map(|(node, id, sid)| {
                    let c = HealthCheck {
                        node: NODES[node].to_owned(),
                        check_id: format!("c{id}"),
                        service_id: sid.map(|s| format!("i{s}")).unwrap_or_default(),
                        ..HealthCheck::default()
                    };
                    ((c.node.clone(), c.check_id.clone()), c)
                })
                .collect()
        },
    )
}

/// The health query's predicate (`State::health_entries`).
fn matches(svc: &NodeService, service: &str, connect: bool) -> bool {
    if connect {
        (svc.kind == ServiceKind::ConnectProxy && svc.proxy.destination_service_name == service)
            || (svc.service == service && svc.connect.native)
    } else {
        svc.service == service
    }
}

proptest! {
    #[test]
    fn tables_agree_with_scans(services in services(), checks in checks()) {
        let t = CatalogTables::build(&services, &checks);
        for name in NAMES.iter().copied().chain(["zz"]) {
            for connect in [false, true] {
                let scan: Vec<&NodeKey> = services
                    .iter()
                    .filter(|(_, s)| matches(s, name, connect))
                    .map(|(k, _)| k)
                    .collect();
                let indexed: Vec<&NodeKey> = t
                    .candidates(name, connect)
                    .into_iter()
                    .filter(|k| matches(&services[*k], name, connect))
                    .collect();
                prop_assert_eq!(indexed, scan, "{} connect={}", name, connect);
            }
        }
        for node in NODES {
            for sid in ["", "i0", "i1", "i5", "zz"] {
                let scan: Vec<&String> = checks
                    .iter()
                    .filter(|((n, _), c)| {
                        n == node && (c.service_id.is_empty() || c.service_id == sid)
                    })
                    .map(|((_, id), _)| id)
                    .collect();
                prop_assert_eq!(t.check_ids(node, sid), scan, "{} {}", node, sid);
            }
        }
    }
}

#[test]
fn merge_is_a_sorted_union() {
    let (a, b) = ([1, 3, 5], [2, 3, 6]);
    assert_eq!(merge(&a, &b), vec![&1, &2, &3, &5, &6]);
    assert_eq!(merge::<i32>(&[], &[]), Vec::<&i32>::new());
}
