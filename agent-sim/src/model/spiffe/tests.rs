//! Tests of SPIFFE ID parsing and formatting.
use super::*;
use proptest::prelude::*;

const TD: &str = "7e567ac2-551d-463f-8497-f78972856fc1.consul";

fn svc(ap: &str, ns: &str, dc: &str, name: &str) -> SpiffeId {
    SpiffeId::Service {
        trust_domain: TD.into(),
        partition: ap.into(),
        namespace: ns.into(),
        datacenter: dc.into(),
        service: name.into(),
    }
}

#[test]
fn parses_every_kind() {
    assert_eq!(
        parse(&format!("spiffe://{TD}/ns/default/dc/dc1/svc/web")),
        Ok(svc("default", "default", "dc1", "web"))
    );
    assert_eq!(
        parse(&format!("spiffe://{TD}/ap/part1/ns/ns1/dc/dc2/svc/db")),
        Ok(svc("part1", "ns1", "dc2", "db"))
    );
    assert_eq!(
        parse(&format!("spiffe://{TD}/agent/client/dc/dc1/id/node-1")),
        Ok(SpiffeId::Agent {
            trust_domain: TD.into(),
            partition: "default".into(),
            datacenter: "dc1".into(),
            node: "node-1".into()
        })
    );
    assert_eq!(
        parse(&format!("spiffe://{TD}/gateway/mesh/dc/dc1")),
        Ok(SpiffeId::MeshGateway {
            trust_domain: TD.into(),
            partition: "default".into(),
            datacenter: "dc1".into()
        })
    );
    assert_eq!(
        parse(&format!("spiffe://{TD}/agent/server/dc/dc1")),
        Ok(SpiffeId::Server {
            trust_domain: TD.into(),
            datacenter: "dc1".into()
        })
    );
    assert_eq!(
        parse(&format!("spiffe://{TD}")),
        Ok(SpiffeId::Signing {
            trust_domain: TD.into()
        })
    );
}

#[test]
fn scheme_is_case_insensitive_and_segments_are_decoded() {
    assert_eq!(
        parse(&format!("SPIFFE://{TD}/ns/default/dc/dc1/svc/web%2Fx")),
        Ok(svc("default", "default", "dc1", "web/x"))
    );
    assert_eq!(
        parse(&format!("spiffe://{TD}/ns/default/dc/dc1/svc/a%20b?x=1#f")),
        Ok(svc("default", "default", "dc1", "a b"))
    );
}

#[test]
fn rejects_with_go_texts() {
    assert_eq!(
        parse(&format!("https://{TD}/ns/default/dc/dc1/svc/web")),
        Err(SpiffeError::Scheme)
    );
    assert_eq!(parse(""), Err(SpiffeError::Scheme));
    for bad in [
        format!("spiffe://{TD}/ns/default/dc/dc1/svc/"),
        format!("spiffe://{TD}/ns/default/dc/dc1/svc/web/extra"),
        format!("spiffe://{TD}/"),
        "spiffe://nodot".to_owned(),
        "spiffe:opaque".to_owned(),
    ] {
        assert_eq!(parse(&bad), Err(SpiffeError::Format(bad.clone())), "{bad}");
    }
    assert_eq!(
        parse(&format!("spiffe://{TD}/ns/default/dc/dc1/svc/web")).map(|_| ()),
        Ok(()),
        "control: the valid form parses"
    );
    assert_eq!(
        SpiffeError::Format("spiffe://x".into()).to_string(),
        "SPIFFE ID is not in the expected format: spiffe://x"
    );
    assert!(matches!(
        parse("spiffe://td.consul/ns/%zz/dc/dc1/svc/web"),
        Err(SpiffeError::Url(_))
    ));
}

#[test]
fn writes_uris_like_consul() {
    assert_eq!(
        svc("default", "default", "dc1", "web").to_uri(),
        format!("spiffe://{TD}/ns/default/dc/dc1/svc/web")
    );
    assert_eq!(
        svc("p", "default", "dc1", "web").to_uri(),
        format!("spiffe://{TD}/ap/p/ns/default/dc/dc1/svc/web")
    );
    assert_eq!(
        SpiffeId::Signing {
            trust_domain: TD.into()
        }
        .to_uri(),
        format!("spiffe://{TD}")
    );
    assert_eq!(
        svc("default", "default", "dc1", "a b").to_uri(),
        format!("spiffe://{TD}/ns/default/dc/dc1/svc/a%20b")
    );
}

fn segment() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 _.%~-]{1,12}"
}

fn any_id() -> impl Strategy<Value = SpiffeId> {
    let td = "[a-z0-9]{1,8}\\.consul";
    let ap = prop_oneof![Just("default".to_owned()), segment()];
    prop_oneof![
        (td, ap.clone(), segment(), segment(), segment()).prop_map(|(t, a, n, d, s)| {
            SpiffeId::Service {
                trust_domain: t,
                partition: a,
                namespace: n,
                datacenter: d,
                service: s,
            }
        }),
        (td, ap.clone(), segment(), segment()).prop_map(|(t, a, d, n)| SpiffeId::Agent {
            trust_domain: t,
            partition: a,
            datacenter: d,
            node: n
        }),
        (td, ap, segment()).prop_map(|(t, a, d)| SpiffeId::MeshGateway {
            trust_domain: t,
            partition: a,
            datacenter: d
        }),
        (td, segment()).prop_map(|(t, d)| SpiffeId::Server {
            trust_domain: t,
            datacenter: d
        }),
        td.prop_map(|t| SpiffeId::Signing { trust_domain: t }),
    ]
}

proptest! {
    #[test]
    fn uri_round_trips(id in any_id()) {
        prop_assert_eq!(parse(&id.to_uri()), Ok(id));
    }
}
