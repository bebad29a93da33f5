//! Tables of expressions over realistic items, each expectation worked out from go-bexpr
//! v0.1.2's evaluation rules (`evaluate.go`) for the Go type behind the JSON.

use serde_json::{Value, json};

use super::support::{agent_sidecar, agent_typical, health_entry};
use crate::filter::{AGENT_SERVICE_FIELDS, Filter, HEALTH_ENTRY_FIELDS};

fn check(fields: &'static [&'static str], item: &Value, cases: &[(&str, bool)]) {
    for &(expr, want) in cases {
        let f = Filter::parse_for(expr, fields).unwrap_or_else(|e| panic!("{expr:?}: {e}"));
        let got = f.matches(item).unwrap_or_else(|e| panic!("{expr:?}: {e}"));
        assert_eq!(got, want, "{expr:?}");
    }
}

#[test]
fn health_entry_table() {
    check(
        HEALTH_ENTRY_FIELDS,
        &health_entry(),
        &[
            // Map values, and keys missing from a map.
            ("Service.Meta.version == v1", true),
            ("Service.Meta.version == v2", false),
            ("Service.Meta.version != v2", true),
            (r#"Service.Meta["team-name"] == "edge""#, true),
            ("Service.Meta.missing == v1", false),
            ("Service.Meta.missing != v1", true),
            ("Service.Meta.missing is empty", true),
            ("Service.Meta.missing is not empty", false),
            ("Service.Meta.missing contains v", false),
            ("Service.Meta.missing not contains v", true),
            // go-bexpr v0.1.2 answers true for `matches` on a missing key, both ways.
            (r#"Service.Meta.missing matches "^v""#, true),
            (r#"Service.Meta.missing not matches "^v""#, true),
            // `in`/`contains` on a map tests its keys.
            ("Service.Meta contains version", true),
            (r#""team-name" in Service.Meta"#, true),
            ("Service.Meta contains v1", false),
            ("Service.Meta is not empty", true),
            ("Node.Meta.rack == r1", true),
            ("Node.TaggedAddresses.lan == `10.0.0.5`", true),
            // A struct inside a map.
            ("Service.TaggedAddresses.lan_ipv4.Port == 21000", true),
            ("Service.TaggedAddresses.wan.Port == 21000", false),
            // Strings.
            (r#"Service.Kind == "connect-proxy""#, true),
            ("Service.Service contains sidecar", true),
            ("sidecar in Service.Service", true),
            ("Service.Service not contains sidecar", false),
            (r#"Service.ID matches "^web-.*-proxy$""#, true),
            (r#"Service.ID not matches "^web-.*-proxy$""#, false),
            ("Service.Proxy.Mode == ``", true),
            ("Node.Node == n1", true),
            // Lists of strings.
            ("Service.Tags contains canary", true),
            ("v2 in Service.Tags", false),
            ("v2 not in Service.Tags", true),
            ("Service.Tags is empty", false),
            ("Service.Tags is not empty", true),
            // Numbers and booleans, coerced like Go's strconv.
            ("Service.Port == 21000", true),
            (r#"Service.Port == "21000""#, true),
            (r#"Service.Port == "0x5208""#, true),
            ("Service.Port != 21000", false),
            ("Service.Weights.Passing == 1", true),
            ("Service.EnableTagOverride == false", true),
            ("Service.EnableTagOverride == f", true),
            ("Service.EnableTagOverride == 0", true),
            ("Service.EnableTagOverride != true", true),
            // A list of structs is an implicit "any", for every operator.
            ("Checks.Status == passing", true),
            ("Checks.Status == critical", true),
            ("Checks.Status == warning", false),
            ("Checks.Status != passing", true),
            ("Checks.Status != critical", true),
            ("not Checks.Status == critical", false),
            ("Checks.ServiceTags contains canary", true),
            (r#"Checks.CheckID matches "^service:""#, true),
            ("Checks is not empty", true),
            ("Service.Proxy.Upstreams.DestinationName == db", true),
            ("Service.Proxy.Upstreams.DestinationName == redis", false),
            ("Service.Proxy.Upstreams.Datacenter == dc2", true),
            ("Service.Proxy.Upstreams.LocalBindPort == 9292", true),
            // Struct fields the renderer omitted hold their zero value.
            ("Service.Connect.Native == false", true),
            ("Service.Connect.Native == true", false),
            (
                "Service.Proxy.TransparentProxy.OutboundListenerPort == 0",
                true,
            ),
            ("Service.Proxy.LocalServiceSocketPath == ``", true),
            ("Service.Proxy.LocalServiceSocketPath != x", true),
            ("Service.SocketPath contains x", false),
            (r#"Service.SocketPath matches "^$""#, true),
            // Selecting into Proxy.Config works here (Consul cannot: it is an interface map).
            ("Service.Proxy.Config.protocol == http", true),
            // Boolean structure and precedence.
            (
                "Service.Meta.version == v2 or Service.Tags contains canary and Node.Node == n1",
                true,
            ),
            (
                "(Service.Meta.version == v2 or Service.Tags contains canary) and Node.Node == n2",
                false,
            ),
            ("not (Service.Meta.version == v1)", false),
            ("not not Service.Meta.version == v1", true),
            (
                "Service.Proxy.DestinationServiceName == web and Service.Meta.version == v1",
                true,
            ),
        ],
    );
}

#[test]
fn agent_services_table() {
    let typical = agent_typical();
    let sidecar = agent_sidecar();
    let cases: &[(&str, bool, bool)] = &[
        // `Kind` is omitted for typical services: it is "".
        (r#"Kind == "connect-proxy""#, false, true),
        (r#"Kind != "connect-proxy""#, true, false),
        (r#"Kind == """#, true, false),
        ("Proxy.DestinationServiceName == db", false, true),
        ("Meta.version == v2", true, false),
        ("Meta is empty", false, true),
        ("Port == 9090", true, false),
        ("Tags is empty", true, true),
        ("Weights.Warning == 1", true, true),
    ];
    for &(expr, on_typical, on_sidecar) in cases {
        let f = Filter::parse_for(expr, AGENT_SERVICE_FIELDS).unwrap();
        assert_eq!(f.matches(&typical).unwrap(), on_typical, "{expr} (typical)");
        assert_eq!(f.matches(&sidecar).unwrap(), on_sidecar, "{expr} (sidecar)");
    }
}

#[test]
fn an_empty_list_of_structs_matches_nothing() {
    let mut entry = health_entry();
    entry["Checks"] = json!([]);
    check(
        HEALTH_ENTRY_FIELDS,
        &entry,
        &[
            ("Checks.Status == passing", false),
            ("Checks.Status != passing", false),
            ("Checks is empty", true),
        ],
    );
}

#[test]
fn null_maps_are_empty() {
    // The health endpoint renders a sidecar's unset Meta as null.
    let mut entry = health_entry();
    entry["Service"]["Meta"] = Value::Null;
    check(
        HEALTH_ENTRY_FIELDS,
        &entry,
        &[
            ("Service.Meta.version == v1", false),
            ("Service.Meta.version != v1", true),
            ("Service.Meta is empty", true),
            ("Service.Meta contains version", false),
            ("Service.Meta not contains version", true),
        ],
    );
}

#[test]
fn apply_filters_arrays_and_maps() {
    let f = Filter::parse_for(r#"Kind == "connect-proxy""#, AGENT_SERVICE_FIELDS).unwrap();
    let list = json!([agent_typical(), agent_sidecar()]);
    assert_eq!(f.apply(list).unwrap(), json!([agent_sidecar()]));
    let map = json!({"db": agent_typical(), "db-sidecar-proxy": agent_sidecar()});
    assert_eq!(
        f.apply(map).unwrap(),
        json!({"db-sidecar-proxy": agent_sidecar()})
    );
    assert_eq!(f.apply(json!([])).unwrap(), json!([]));
    assert_eq!(
        f.apply(json!("x")).unwrap_err().to_string(),
        "Only slices, arrays and maps are filterable"
    );
}

#[test]
fn untyped_filters_use_the_items_keys() {
    let f = Filter::parse("Service.Meta.version == v1").unwrap();
    assert!(f.matches(&health_entry()).unwrap());
    assert_eq!(f.expression(), "Service.Meta.version == v1");
    assert_eq!(f.to_string(), "Service.Meta.version == v1");
}
