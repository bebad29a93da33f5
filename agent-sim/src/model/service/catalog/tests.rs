//! Tests for catalog register/deregister decoding and the servers' checks.

use super::*;

fn register(body: &str) -> Result<CatalogRegistration, RegisterError> {
    decode_catalog_register(body.as_bytes(), "dc1")
}

#[test]
fn decodes_node_service_and_checks_with_defaults() {
    let reg = register(
        r#"{"Node":"n2","Address":"10.0.0.9","ID":"40e4a748-2192-161a-0510-9bf59fe950b5",
            "TaggedAddresses":{"lan":"10.0.0.9"},"NodeMeta":{"Rack":"r1"},"UnknownTop":1,
            "Service":{"Service":"db","Port":5432,"Tags":["primary"],"Address":"10.0.0.9",
                "Proxy":{"Mode":"direct"},"Bogus":true},
            "Check":{"Name":"db alive","ServiceID":"db","Definition":{"TTL":"15s","Interval":"10s"}},
            "Checks":[{"CheckID":"serfHealth","Status":"passing"}]}"#,
    )
    .unwrap();
    assert_eq!(reg.node.name, "n2");
    assert_eq!(
        reg.node.datacenter, "dc1",
        "datacenter defaults to the agent's"
    );
    assert_eq!(reg.node.tagged_addresses["lan"], "10.0.0.9");
    assert_eq!(reg.node.meta["Rack"], "r1");
    let svc = reg.service.unwrap();
    assert_eq!(
        (svc.id.as_str(), svc.service.as_str(), svc.port),
        ("db", "db", 5432)
    );
    assert_eq!(svc.weights, Weights::default());
    assert!(
        svc.tagged_addresses.is_empty(),
        "the catalog adds no default tagged addresses"
    );
    let [first, second] = reg.checks.as_slice() else {
        panic!("two checks")
    };
    assert_eq!(
        (first.node.as_str(), first.check_id.as_str()),
        ("n2", "db alive")
    );
    assert_eq!(
        (first.status.as_str(), first.type_.as_str()),
        ("critical", "ttl")
    );
    assert_eq!(
        (first.service_name.as_str(), first.service_tags.as_slice()),
        ("db", &["primary".to_owned()][..])
    );
    assert_eq!(first.definition.ttl.0, 15_000_000_000);
    assert_eq!(first.definition.interval.0, 10_000_000_000);
    assert_eq!(
        (
            second.check_id.as_str(),
            second.status.as_str(),
            second.type_.as_str()
        ),
        ("serfHealth", "passing", "")
    );
}

#[test]
fn servers_checks_and_texts() {
    let rpc = |s: &str| Err(RegisterError::Rpc(s.into()));
    assert_eq!(register("{}"), rpc("Must provide node"));
    assert_eq!(
        register(r#"{"Node":"n2"}"#),
        rpc("Must provide address if SkipNodeUpdate is not set")
    );
    assert!(register(r#"{"Node":"n2","SkipNodeUpdate":true}"#).is_ok());
    assert_eq!(
        register(r#"{"Node":"n2","Address":"a","ID":"x"}"#),
        rpc("Bad node ID: uuid string is wrong length")
    );
    assert_eq!(
        register(r#"{"Node":"n2","Address":"a","ID":"40e4a748_2192-161a-0510-9bf59fe950b5"}"#),
        rpc("Bad node ID: uuid is improperly formatted")
    );
    assert_eq!(
        register(r#"{"Node":"n2","Address":"a","ID":"g0e4a748-2192-161a-0510-9bf59fe950b5"}"#),
        rpc("Bad node ID: encoding/hex: invalid byte: U+0067 'g'")
    );
    assert_eq!(
        register(
            r#"{"Node":"n2","Address":"a","Service":{"Service":"p","Kind":"connect-proxy","Proxy":{"DestinationServiceName":"web"}}}"#
        ),
        rpc("1 error occurred:\n\t* Port or SocketPath must be set for a connect-proxy\n\n")
    );
    assert_eq!(
        register(r#"{"Node":"n2","Address":"a","Service":{"ID":"x"}}"#),
        rpc("Must provide service name (Service.Service) with ID (Service.ID)")
    );
    assert_eq!(
        register(r#"{"Node":"n2","Address":"a","Service":{"Service":"x","Address":"0.0.0.0"}}"#),
        rpc("Invalid service address")
    );
    assert_eq!(
        register(r#"{"Node":"n2","Address":"a","Check":{"Node":"n3","Name":"c"}}"#),
        rpc(r#"check node "n3" does not match node "n2""#)
    );
}

#[test]
fn decode_errors() {
    let bad = |s: &str| Err(RegisterError::BadRequest(s.into()));
    assert_eq!(register(""), bad("Request decode failed: EOF"));
    assert_eq!(
        register(r#"{"Node":"n2","Address":"a","Service":{"Service":"p","Proxy":{"Nope":1}}}"#),
        bad(r#"Request decode failed: json: unknown field "Nope""#),
        "Proxy is decoded strictly, as Consul's ConnectProxyConfig decoder does"
    );
    assert_eq!(
        register(r#"{"Node":"n2","Address":"a","Check":{"Definition":{"Interval":"often"}}}"#),
        bad(r#"Request decode failed: time: invalid duration "often""#)
    );
}

#[test]
fn invalid_weights_fall_back_to_defaults() {
    let reg = register(r#"{"Node":"n2","Address":"a","Service":{"Service":"x","Weights":{"Passing":0,"Warning":5}}}"#).unwrap();
    assert_eq!(
        reg.service.unwrap().weights,
        Weights {
            passing: 1,
            warning: 1
        }
    );
    let reg = register(r#"{"Node":"n2","Address":"a","Service":{"Service":"x","Weights":{"Passing":3,"Warning":0}}}"#).unwrap();
    assert_eq!(
        reg.service.unwrap().weights,
        Weights {
            passing: 3,
            warning: 0
        }
    );
}

#[test]
fn deregister() {
    let d = decode_catalog_deregister(
        br#"{"Node":"n2","ServiceID":"db","Address":"ignored"}"#,
        "dc1",
    )
    .unwrap();
    assert_eq!(
        d,
        CatalogDeregistration {
            datacenter: "dc1".into(),
            node: "n2".into(),
            service_id: "db".into(),
            check_id: String::new()
        }
    );
    assert_eq!(
        decode_catalog_deregister(br#"{"ServiceID":"db"}"#, "dc1"),
        Err(RegisterError::Rpc("Must provide node".into()))
    );
    assert_eq!(
        decode_catalog_deregister(br#"{"Node":"n2","Extra":1}"#, "dc1"),
        Err(RegisterError::BadRequest(
            r#"Request decode failed: json: unknown field "Extra""#.into()
        ))
    );
}
