//! Each `Forgery` verifies, or fails to verify, against the trusted roots exactly as intended,
//! and carries the identity it claims.

use time::macros::datetime;

use super::support::*;
use crate::model::ca::{ClientIdentity, Forgery};

const NOW: time::OffsetDateTime = datetime!(2025-05-21 18:00:00 UTC);

fn forge(what: &Forgery) -> (crate::model::ca::Ca, ClientIdentity) {
    let ca = new_ca();
    let id = ca.forge(what, NOW).unwrap();
    assert!(
        key_matches(&id.cert_chain_pem, &id.private_key_pem),
        "{what:?}: key/cert mismatch"
    );
    assert!(
        id.private_key_pem
            .starts_with("-----BEGIN EC PRIVATE KEY-----")
    );
    (ca, id)
}

fn trusted(ca: &crate::model::ca::Ca) -> Vec<String> {
    ca.root_certs_pem()
}

fn check(ca: &crate::model::ca::Ca, id: &ClientIdentity) -> Result<(), rustls::Error> {
    let roots = trusted(ca);
    let roots: Vec<&str> = roots.iter().map(String::as_str).collect();
    verify_client(&id.cert_chain_pem, &roots, NOW)
}

fn leaf_uris(id: &ClientIdentity) -> Vec<String> {
    let der = ders(&id.cert_chain_pem).remove(0);
    uris(&parse(&der))
}

fn leaf_cn(id: &ClientIdentity) -> Option<String> {
    let der = ders(&id.cert_chain_pem).remove(0);
    let cert = parse(&der);
    cert.subject()
        .iter_common_name()
        .next()
        .map(|cn| cn.as_str().unwrap().to_owned())
}

#[test]
fn untrusted_ca_is_rejected_but_otherwise_valid() {
    let (ca, id) = forge(&Forgery::UntrustedCa {
        service: "web".into(),
    });
    assert!(is_unknown_issuer(&check(&ca, &id)));
    // It fails only because its CA is not trusted.
    assert!(verify_client(&id.cert_chain_pem, &[ca.untrusted_root_pem()], NOW).is_ok());
    let uri = id.uri.clone().unwrap();
    assert_eq!(leaf_uris(&id), std::slice::from_ref(&uri));
    assert!(uri.ends_with(".consul/ns/default/dc/dc1/svc/web"), "{uri}");
    assert!(!uri.contains(TD), "another trust domain: {uri}");
    assert!(!trusted(&ca).iter().any(|r| r == ca.untrusted_root_pem()));
}

#[test]
fn foreign_trust_domain_chains_to_the_trusted_root() {
    let (ca, id) = forge(&Forgery::ForeignTrustDomain {
        service: "web".into(),
    });
    assert!(check(&ca, &id).is_ok());
    let uri = id.uri.clone().unwrap();
    assert_eq!(leaf_uris(&id), std::slice::from_ref(&uri));
    let host = uri
        .strip_prefix("spiffe://")
        .unwrap()
        .split('/')
        .next()
        .unwrap();
    assert_ne!(host, TD);
    assert!(
        uuid::Uuid::parse_str(host.strip_suffix(".consul").unwrap()).is_ok(),
        "{host}"
    );
    assert!(uri.ends_with("/ns/default/dc/dc1/svc/web"));
    let der = ders(&id.cert_chain_pem).remove(0);
    assert_eq!(hex(&akid(&parse(&der))), ca.active_signing_key_id());
}

#[test]
fn expired_fails_only_on_time() {
    let (ca, id) = forge(&Forgery::Expired {
        service: "web".into(),
    });
    assert!(is_expired(&check(&ca, &id)), "{:?}", check(&ca, &id));
    let roots = trusted(&ca);
    let during = NOW - time::Duration::minutes(30);
    assert!(verify_client(&id.cert_chain_pem, &[&roots[0]], during).is_ok());
    assert_eq!(
        id.uri.unwrap(),
        format!("spiffe://{TD}/ns/default/dc/dc1/svc/web")
    );
}

#[test]
fn no_spiffe_has_no_san_and_the_given_cn() {
    let (ca, id) = forge(&Forgery::NoSpiffe {
        common_name: "web".into(),
    });
    assert!(check(&ca, &id).is_ok());
    assert_eq!(id.uri, None);
    let der = ders(&id.cert_chain_pem).remove(0);
    assert!(parse(&der).subject_alternative_name().unwrap().is_none());
    assert_eq!(leaf_cn(&id).as_deref(), Some("web"));
}

#[test]
fn agent_id_is_a_trusted_agent_spiffe_id() {
    let (ca, id) = forge(&Forgery::AgentId {
        node: "node-1".into(),
    });
    assert!(check(&ca, &id).is_ok());
    let uri = format!("spiffe://{TD}/agent/client/dc/dc1/id/node-1");
    assert_eq!(id.uri.as_deref(), Some(uri.as_str()));
    assert_eq!(leaf_uris(&id), [uri]);
}

#[test]
fn common_name_mismatch_names_the_service_in_the_san_only() {
    let (ca, id) = forge(&Forgery::CommonNameMismatch {
        common_name: "db".into(),
        service: "web".into(),
    });
    assert!(check(&ca, &id).is_ok());
    assert_eq!(leaf_cn(&id).as_deref(), Some("db"));
    assert_eq!(
        leaf_uris(&id),
        [format!("spiffe://{TD}/ns/default/dc/dc1/svc/web")]
    );
}

#[test]
fn self_signed_is_rejected() {
    let (ca, id) = forge(&Forgery::SelfSigned {
        service: "web".into(),
    });
    let result = check(&ca, &id);
    assert!(result.is_err(), "self-signed leaf accepted");
    let der = ders(&id.cert_chain_pem).remove(0);
    let cert = parse(&der);
    assert_eq!(cert.issuer(), cert.subject());
    assert!(!cert.is_ca());
    assert_eq!(ders(&id.cert_chain_pem).len(), 1);
}

#[test]
fn trusted_forgeries_carry_the_cross_signed_cert_after_rotation() {
    let mut ca = new_ca();
    let old_root = ca.root_certs_pem()[0].clone();
    ca.rotate(true, NOW - time::Duration::hours(1), 20, &mut rng())
        .unwrap();
    let id = ca
        .forge(
            &Forgery::ForeignTrustDomain {
                service: "web".into(),
            },
            NOW,
        )
        .unwrap();
    assert_eq!(ders(&id.cert_chain_pem).len(), 2);
    assert!(verify_client(&id.cert_chain_pem, &[&old_root], NOW).is_ok());
    let untrusted = ca
        .forge(
            &Forgery::UntrustedCa {
                service: "web".into(),
            },
            NOW,
        )
        .unwrap();
    assert_eq!(
        ders(&untrusted.cert_chain_pem).len(),
        1,
        "no trusted intermediates"
    );
}

#[test]
fn forgeries_leave_the_serial_counter_alone_but_identities_count() {
    let mut ca = new_ca();
    ca.forge(
        &Forgery::Expired {
            service: "web".into(),
        },
        NOW,
    )
    .unwrap();
    let id = ca.issue_identity("web", "dc1", NOW, 9).unwrap();
    assert_eq!(
        id.uri.as_deref(),
        Some(format!("spiffe://{TD}/ns/default/dc/dc1/svc/web").as_str())
    );
    let der = ders(&id.cert_chain_pem).remove(0);
    assert_eq!(parse(&der).raw_serial_as_string(), "02");
    assert!(check(&ca, &id).is_ok());
    assert_eq!(
        ca.issue_leaf("web", "dc1", NOW, 10).unwrap().serial_number,
        "03"
    );
}

#[test]
fn forgeries_are_valid_now_with_a_short_leaf_ttl() {
    // Only the forged property may fail: with a TTL of seconds, Consul's 1-minute backdate
    // would leave every forged leaf already expired (the sim caps it at a tenth of the TTL,
    // as for real leaves).
    let mut ca = new_ca();
    ca.set_leaf_ttl(std::time::Duration::from_secs(10));
    let service = || "web".to_owned();
    for what in [
        Forgery::ForeignTrustDomain { service: service() },
        Forgery::NoSpiffe {
            common_name: service(),
        },
        Forgery::AgentId { node: service() },
        Forgery::CommonNameMismatch {
            common_name: "db".into(),
            service: service(),
        },
    ] {
        let id = ca.forge(&what, NOW).unwrap();
        assert!(check(&ca, &id).is_ok(), "{what:?}: {:?}", check(&ca, &id));
        let real = ca.issue_identity("web", "dc1", NOW, 9).unwrap();
        let validity = |pem: &str| {
            let der = ders(pem).remove(0);
            let cert = parse(&der);
            (
                cert.validity().not_before.timestamp(),
                cert.validity().not_after.timestamp(),
            )
        };
        assert_eq!(
            validity(&id.cert_chain_pem),
            validity(&real.cert_chain_pem),
            "{what:?}: same validity as a real leaf"
        );
    }
    let untrusted = ca
        .forge(&Forgery::UntrustedCa { service: service() }, NOW)
        .unwrap();
    assert!(is_unknown_issuer(&check(&ca, &untrusted)));
    let expired = ca
        .forge(&Forgery::Expired { service: service() }, NOW)
        .unwrap();
    assert!(is_expired(&check(&ca, &expired)));
}
