//! Implicit upstreams in the snapshot: derived from source intentions in transparent mode only,
//! without a listener, never shadowing an explicit upstream.

use serde_json::json;

use super::super::*;
use crate::authz::Intention;
use crate::snapshot::Bind;

fn state(mode: &str) -> State {
    let ca = crate::testutil::TestCa::new("CA");
    State {
        roots: Some(ca.roots()),
        leaf: Some(ca.service_leaf("web").leaf()),
        policy: Some(DefaultPolicy::DENY),
        intentions: Some(Arc::new(IntentionSet::new("web", vec![]))),
        mesh: Some(None),
        jwt: Some(Arc::default()),
        source_intentions: Some(vec![
            Intention::l4("web", "api", true),
            Intention::l4("web", "cache", true),
            Intention::l4("web", "queue", false),
        ]),
        catalog: Some(vec![
            "web".into(),
            "queue".into(),
            "cache-sidecar-proxy".into(),
        ]),
        service: Some(
            serde_json::from_value(
                json!({"Kind":"connect-proxy","ID":"web-sidecar-proxy","Port":21000,
                "Datacenter":"dc1","Proxy":{"DestinationServiceName":"web","LocalServicePort":8080,
                "Mode":mode,"Upstreams":[{"DestinationName":"cache","LocalBindPort":9191}]}}),
            )
            .unwrap(),
        ),
        ..State::default()
    }
}

#[test]
fn transparent_mode_adds_the_allowed_services_without_a_listener() {
    let snap = state("transparent").snapshot().unwrap();
    let got: Vec<(String, String)> = snap
        .upstreams
        .iter()
        .map(|u| (u.name.clone(), u.bind.to_string()))
        .collect();
    assert_eq!(
        got,
        [
            ("cache".to_owned(), "127.0.0.1:9191".to_owned()),
            ("api".to_owned(), Bind::Implicit.to_string()),
        ],
        "cache stays explicit only; queue is denied"
    );
    assert!(!snap.upstream("api").unwrap().bind.has_listener());
}

#[test]
fn direct_mode_has_no_implicit_upstreams() {
    let snap = state("direct").snapshot().unwrap();
    let names: Vec<&str> = snap.upstreams.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["cache"]);
}
