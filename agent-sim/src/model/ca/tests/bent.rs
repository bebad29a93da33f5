//! A CA that bends SPIFFE (`CaConfig::spiffe_ca_san` off): roots and intermediates carry no
//! trust-domain URI SAN, through rotations too, while leaves and forgeries keep their SPIFFE IDs
//! and still chain to the roots.

use super::support::{CLUSTER, T0, ders, parse, rng, uris, verify_client};
use crate::model::ca::{Ca, CaConfig, Forgery};

fn bent_ca(intermediate: bool) -> Ca {
    let cfg = CaConfig {
        cluster_id: CLUSTER.into(),
        intermediate,
        spiffe_ca_san: false,
        ..CaConfig::default()
    };
    Ca::new(cfg, T0, 8, &mut rng()).unwrap()
}

/// Every CA certificate the roots table lists: roots and their `IntermediateCerts`.
fn ca_certs(ca: &Ca) -> Vec<String> {
    let roots = ca.roots_json();
    let mut out = Vec::new();
    for r in roots["Roots"].as_array().unwrap() {
        out.push(r["RootCert"].as_str().unwrap().to_owned());
        for i in r["IntermediateCerts"].as_array().into_iter().flatten() {
            out.push(i.as_str().unwrap().to_owned());
        }
    }
    out
}

fn assert_no_ca_uri(ca: &Ca) {
    for pem in ca_certs(ca) {
        for der in ders(&pem) {
            let cert = parse(&der);
            assert!(cert.is_ca());
            assert!(uris(&cert).is_empty(), "CA cert with a URI SAN: {pem}");
        }
    }
}

#[test]
fn roots_and_intermediates_carry_no_uri_san_but_leaves_do() {
    for intermediate in [false, true] {
        let mut ca = bent_ca(intermediate);
        assert_no_ca_uri(&ca);
        let leaf = ca.issue_leaf("web", "", T0, 9).unwrap();
        let chain = ders(&leaf.cert_pem);
        assert_eq!(chain.len(), 1 + usize::from(intermediate));
        assert_eq!(
            uris(&parse(&chain[0])),
            vec![format!(
                "spiffe://{CLUSTER}.consul/ns/default/dc/dc1/svc/web"
            )]
        );
        let roots = ca.root_certs_pem();
        let refs: Vec<&str> = roots.iter().map(String::as_str).collect();
        verify_client(&leaf.cert_pem, &refs, T0).unwrap();
        // The roots JSON still names the trust domain (Consul's is the cluster's, not the cert's).
        assert_eq!(ca.roots_json()["TrustDomain"], format!("{CLUSTER}.consul"));
        // Forgeries signed by the bent CA chain to it, with their own (wrong) URIs.
        let forged = ca
            .forge(&Forgery::AgentId { node: "n1".into() }, T0)
            .unwrap();
        verify_client(&forged.cert_chain_pem, &refs, T0).unwrap();
    }
}

#[test]
fn rotations_keep_the_ca_bent() {
    let mut ca = bent_ca(true);
    ca.rotate_intermediate(T0, 10, &mut rng()).unwrap();
    ca.rotate(true, T0, 11, &mut rng()).unwrap();
    assert_no_ca_uri(&ca);
    // The default CA carries the URI SAN on its root (the control for the checks above).
    let clean = Ca::new(
        CaConfig {
            cluster_id: CLUSTER.into(),
            ..CaConfig::default()
        },
        T0,
        8,
        &mut rng(),
    )
    .unwrap();
    let root = ders(&clean.root_certs_pem()[0]).remove(0);
    assert_eq!(
        uris(&parse(&root)),
        vec![format!("spiffe://{CLUSTER}.consul")]
    );
}
