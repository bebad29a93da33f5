//! The catalog's lookups against a plain reference: `checks_for` reads only the node's range of
//! the check table and must return exactly what a scan of every check returns.

use super::*;
use crate::state::store::Store;

fn check(node: &str, id: &str, service_id: &str) -> HealthCheck {
    HealthCheck {
        node: node.to_owned(),
        check_id: id.to_owned(),
        service_id: service_id.to_owned(),
        status: service::HEALTH_PASSING.into(),
        ..HealthCheck::default()
    }
}

/// The definition `checks_for` had before it used the node's range: every check scanned.
fn reference<'a>(st: &'a State, node: &str, service_id: &str) -> Vec<&'a HealthCheck> {
    st.checks
        .iter()
        .filter(|((n, _), c)| n == node && (c.service_id.is_empty() || c.service_id == service_id))
        .map(|(_, c)| c)
        .collect()
}

#[test]
fn checks_for_returns_what_a_full_scan_returns() {
    let store = Store::new(SimConfig::default()).unwrap();
    // Node names that are prefixes of each other, an empty check ID, node-level checks, and
    // checks of other services on the same node.
    let nodes = ["n", "n1", "n10", "n1-a", "m", ""];
    store.write(|st| {
        for (i, node) in nodes.iter().enumerate() {
            st.checks.insert(
                (node.to_string(), "serfHealth".into()),
                check(node, "serfHealth", ""),
            );
            for s in 0..3 {
                let sid = format!("svc-{s}");
                for (j, id) in ["", "a", "z"].iter().enumerate() {
                    let cid = format!("{id}{s}{j}{i}");
                    st.checks
                        .insert((node.to_string(), cid.clone()), check(node, &cid, &sid));
                }
            }
        }
        st.checks
            .insert(("n1".into(), String::new()), check("n1", "", "svc-1"));
    });
    store.read(|st| {
        let mut compared = 0;
        for node in nodes.iter().chain(&["absent", "n0", "o"]) {
            for sid in ["svc-0", "svc-1", "svc-2", "svc-9", ""] {
                let got = st.checks_for(node, sid);
                assert_eq!(
                    got,
                    reference(st, node, sid),
                    "node {node:?} service {sid:?}"
                );
                compared += got.len();
            }
        }
        // Per fixture node: svc-0..2 each see serfHealth + their 3 checks, svc-9 and "" only
        // serfHealth (6 x 14), plus n1's empty-ID check of svc-1.
        assert_eq!(compared, 6 * 14 + 1);
        // The agent's own node keeps its serfHealth.
        let own = &store.cfg.node_name;
        assert!(
            st.checks_for(own, "x")
                .iter()
                .any(|c| c.check_id == "serfHealth")
        );
        assert_eq!(st.checks_for("n1", "svc-1").len(), 1 + 3 + 1);
    });
}
