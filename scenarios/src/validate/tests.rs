//! Tests of validation: each rule refuses what it should, names the field, and accepts the
//! well-formed counterpart.

mod app;
mod app_seen;
mod edges;
mod h2;
mod implicit;

use super::*;
use crate::model::{Generator, Profile, Setup};
use crate::parse;

const HEAD: &str = "id = \"x\"\ndescription = \"d\"\nprofile = \"core\"\n";

/// The (field, message) of the validation error for HEAD + `body`.
fn bad(body: &str) -> (String, String) {
    let e = parse("x.toml", &format!("{HEAD}{body}")).unwrap_err();
    assert!(e.line.is_some(), "{e}");
    (e.field.unwrap_or_default(), e.message)
}

fn good(body: &str) {
    if let Err(e) = parse("x.toml", &format!("{HEAD}{body}")) {
        panic!("{e}");
    }
}

fn expect_step(check: &str) -> String {
    format!("\n[[steps]]\ndo = \"expect\"\nname = \"n\"\ncheck = {check}\n")
}

#[test]
fn ids_features_and_catches() {
    let e = parse(
        "x.toml",
        "id = \"Bad_Id\"\ndescription = \"d\"\nprofile = \"core\"\n",
    )
    .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("id"));
    assert_eq!(e.line, Some(1));
    let e = parse(
        "x.toml",
        "id = \"x\"\ndescription = \" \"\nprofile = \"core\"\n",
    )
    .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("description"));

    let (f, m) = bad("features = [\"l4\", \"l9\"]\n");
    assert_eq!(f, "features[1]");
    assert!(m.contains("unknown feature \"l9\""), "{m}");
    let (f, m) = bad("features = [\"l4\", \"l4\"]\n");
    assert_eq!(
        (f.as_str(), m.as_str()),
        ("features[1]", "\"l4\" is listed twice")
    );
    good("features = [\"l4\", \"agent-blocking\"]\ncatches = [\"ignore-deny\"]\n");
    let (f, _) = bad("catches = [\"ignore-denies\"]\n");
    assert_eq!(f, "catches[0]");
}

#[test]
fn catches_name_the_checks_that_must_fail() {
    let step = expect_step(
        "{ kind = \"inbound\", identity = { kind = \"service\", service = \"web\" }, outcome = \"allowed\" }",
    );
    // The bare name and the table form are both accepted, and mean what they say.
    good(&format!(
        "catches = [\"first-match\", {{ sabotage = \"ignore-deny\", checks = [\"n\"] }}]\n{step}"
    ));
    let s = parse(
        "x.toml",
        &format!("{HEAD}catches = [\"first-match\", {{ sabotage = \"ignore-deny\", checks = [\"n\"] }}]\n{step}"),
    )
    .unwrap();
    assert_eq!(
        s.catches,
        vec![
            crate::model::Catch::any("first-match"),
            crate::model::Catch::by("ignore-deny", &["n"])
        ]
    );
    // A check that is not an `expect` step of the scenario.
    let (f, m) = bad(&format!(
        "catches = [{{ sabotage = \"ignore-deny\", checks = [\"n\", \"web denied\"] }}]\n{step}"
    ));
    assert_eq!(f, "catches[0].checks[1]");
    assert!(
        m.contains("\"web denied\" is not the name of an `expect` step"),
        "{m}"
    );
    assert!(m.contains("known: n"), "{m}");
    // An unknown sabotage in the table form, a sabotage listed twice across both forms.
    let (f, _) = bad(&format!(
        "catches = [{{ sabotage = \"ignore-denies\", checks = [\"n\"] }}]\n{step}"
    ));
    assert_eq!(f, "catches[0]");
    let (f, m) = bad(&format!(
        "catches = [\"ignore-deny\", {{ sabotage = \"ignore-deny\", checks = [\"n\"] }}]\n{step}"
    ));
    assert_eq!(
        (f.as_str(), m.as_str()),
        ("catches[1]", "\"ignore-deny\" is listed twice")
    );
    // A table missing its checks, or with a stray key.
    let (f, m) = bad("catches = [{ sabotage = \"ignore-deny\" }]\n");
    assert!(f.starts_with("catches"), "{f}: {m}");
    assert!(m.contains("checks"), "{m}");
    let (_, m) = bad("catches = [{ sabotage = \"ignore-deny\", check = [\"n\"] }]\n");
    assert!(m.contains("check"), "{m}");
}

#[test]
fn setup_durations_protocol_and_names() {
    let (f, m) = bad("[setup]\nleaf_ttl = \"500ms\"\n");
    assert_eq!(
        (f.as_str(), m.as_str()),
        ("setup.leaf_ttl", "must be at least 1s")
    );
    let (f, _) = bad("[setup]\nca_change_jitter = \"soon\"\n");
    assert_eq!(f, "setup.ca_change_jitter");
    let (f, _) = bad("[setup]\nprotocol = \"udp\"\n");
    assert_eq!(f, "setup.protocol");
    let (f, _) =
        bad("[[setup.upstreams]]\nname = \"cache\"\n[[setup.upstreams]]\nname = \"cache\"\n");
    assert_eq!(f, "setup.upstreams[1].name");
    let (f, _) = bad("[[setup.instances]]\nid = \"c\"\nservice = \"cache\"\nstatus = \"sick\"\n");
    assert_eq!(f, "setup.instances[0].status");
    let (f, _) = bad(
        "[[setup.instances]]\nid = \"c\"\nservice = \"cache\"\n[[setup.instances]]\nid = \"c\"\nservice = \"cache\"\n",
    );
    assert_eq!(f, "setup.instances[1].id");
    good("[setup]\nleaf_ttl = \"1s\"\nca_change_jitter = \"0s\"\nprotocol = \"http2\"\n");
}

#[test]
fn intentions_follow_consuls_rules() {
    let (f, m) = bad("[[setup.intentions]]\nsource = \"web\"\n");
    assert_eq!(f, "setup.intentions[0]");
    assert!(m.contains("needs `action`"), "{m}");
    let (f, _) = bad(
        "[setup]\nprotocol = \"http\"\n[[setup.intentions]]\nsource = \"web\"\naction = \"allow\"\npermissions = [{ Action = \"allow\", HTTP = { PathPrefix = \"/\" } }]\n",
    );
    assert_eq!(f, "setup.intentions[0].action");
    let (f, m) = bad("[[setup.intentions]]\nsource = \"web*\"\naction = \"allow\"\n");
    assert_eq!(f, "setup.intentions[0].source");
    assert!(m.contains("partial wildcards"), "{m}");
    let (f, m) = bad(
        "[[setup.intentions]]\nsource = \"web\"\npermissions = [{ Action = \"allow\", HTTP = { PathPrefix = \"/\" } }]\n",
    );
    assert_eq!(f, "setup.intentions[0].permissions");
    assert!(m.contains("protocol"), "{m}");
    let (f, m) = bad(
        "[setup]\nprotocol = \"http\"\n[[setup.intentions]]\nsource = \"web\"\ndestination = \"*\"\npermissions = [{ Action = \"allow\", HTTP = { PathPrefix = \"/\" } }]\n",
    );
    assert_eq!(f, "setup.intentions[0].permissions");
    assert!(m.contains("wildcarded destinations"), "{m}");
    let (f, _) = bad(
        "[setup]\nprotocol = \"http\"\n[[setup.intentions]]\nsource = \"web\"\npermissions = [{ Action = \"allow\", HTTP = {} }]\n",
    );
    assert_eq!(f, "setup.intentions[0].permissions[0].HTTP");
    let (f, _) = bad(
        "[setup]\nprotocol = \"http\"\n[[setup.intentions]]\nsource = \"web\"\npermissions = [{ Action = \"permit\", HTTP = { PathPrefix = \"/\" } }]\n",
    );
    assert_eq!(f, "setup.intentions[0].permissions[0].Action");
    // The protocol may come from a service-defaults entry instead.
    good(
        "[[setup.config_entries]]\nKind = \"service-defaults\"\nName = \"db\"\nProtocol = \"http\"\n[[setup.intentions]]\nsource = \"web\"\npermissions = [{ Action = \"allow\", HTTP = { PathPrefix = \"/\" } }]\n",
    );
    good("[[setup.intentions]]\nsource = \"*\"\ndestination = \"*\"\naction = \"deny\"\n");
}

#[test]
fn config_entries_need_kind_and_name() {
    let (f, m) = bad("[[setup.config_entries]]\nName = \"cache\"\n");
    assert_eq!(f, "setup.config_entries[0]");
    assert!(m.contains("`Kind` and `Name`"), "{m}");
    let (f, _) = bad("[[setup.config_entries]]\nKind = \"mesh-gizmo\"\nName = \"x\"\n");
    assert_eq!(f, "setup.config_entries[0].Kind");
    let (f, _) =
        bad("\n[[steps]]\ndo = \"config-entry\"\nentry = { Kind = \"service-resolver\" }\n");
    assert_eq!(f, "steps[0].entry");
    good(
        "\n[[steps]]\ndo = \"config-entry\"\nentry = { kind = \"service-resolver\", name = \"cache\" }\n",
    );
}

#[test]
fn references_resolve_in_timeline_order() {
    // Connections: used before opened.
    let (f, _) = bad(&expect_step("{ kind = \"conn-closed\", conn = \"c\" }"));
    assert_eq!(f, "steps[0].check.conn");
    // Opened twice.
    let open = "\n[[steps]]\ndo = \"open\"\nconn = \"c\"\nidentity = { kind = \"service\", service = \"web\" }\n";
    let (f, _) = bad(&format!("{open}{open}"));
    assert_eq!(f, "steps[1].conn");
    good(&format!(
        "{open}{}",
        expect_step("{ kind = \"conn-open\", conn = \"c\" }")
    ));
    // An http check on a tcp connection.
    let (f, m) = bad(&format!(
        "{open}{}",
        expect_step("{ kind = \"http\", conn = \"c\", path = \"/\", status = 200 }")
    ));
    assert_eq!(f, "steps[1].check.conn");
    assert!(m.contains("\"tcp\""), "{m}");

    // Named identities: used before issued.
    let (f, _) = bad(&expect_step(
        "{ kind = \"inbound\", identity = { kind = \"named\", name = \"old\" }, outcome = \"allowed\" }",
    ));
    assert_eq!(f, "steps[0].check.identity.name");
    good(&format!(
        "\n[[steps]]\ndo = \"issue\"\nname = \"old\"\nservice = \"web\"\n{}",
        expect_step(
            "{ kind = \"inbound\", identity = { kind = \"named\", name = \"old\" }, outcome = \"allowed\" }"
        )
    ));

    // Marks: differs_from_mark needs an earlier mark or issue; names are not reused.
    let (f, _) = bad(&expect_step(
        "{ kind = \"served-leaf\", differs_from_mark = \"m\" }",
    ));
    assert_eq!(f, "steps[0].check.differs_from_mark");
    let (f, _) = bad(
        "\n[[steps]]\ndo = \"mark\"\nname = \"m\"\n\n[[steps]]\ndo = \"issue\"\nname = \"m\"\nservice = \"web\"\n",
    );
    assert_eq!(f, "steps[1].name");
}

#[test]
fn instances_and_upstreams_must_exist() {
    let (f, _) =
        bad("\n[[steps]]\ndo = \"set-health\"\ninstance = \"cache-9\"\nstatus = \"critical\"\n");
    assert_eq!(f, "steps[0].instance");
    let (f, _) = bad(&expect_step(
        "{ kind = \"upstream\", upstream = \"cache\", reach = [\"cache-1\"] }",
    ));
    assert_eq!(f, "steps[0].check.upstream");

    let setup = "[[setup.upstreams]]\nname = \"cache\"\n[[setup.instances]]\nid = \"cache-1\"\nservice = \"cache\"\n";
    let (f, _) = bad(&format!(
        "{setup}{}",
        expect_step(
            "{ kind = \"upstream\", upstream = \"cache\", reach = [\"cache-1\", \"cache-2\"] }"
        )
    ));
    assert_eq!(f, "steps[0].check.reach[1]");
    // An instance added by an earlier step counts.
    good(&format!(
        "{setup}\n[[steps]]\ndo = \"add-instance\"\nid = \"cache-2\"\nservice = \"cache\"\n{}",
        expect_step(
            "{ kind = \"upstream\", upstream = \"cache\", reach = [\"cache-1\", \"cache-2\"] }"
        )
    ));
    // ...but not a second time.
    let (f, _) = bad(&format!(
        "{setup}\n[[steps]]\ndo = \"add-instance\"\nid = \"cache-1\"\nservice = \"cache\"\n"
    ));
    assert_eq!(f, "steps[0].id");

    // A non-initial upstream is usable only after add-upstream, which must name it.
    let late = "[[setup.upstreams]]\nname = \"cache\"\ninitial = false\n";
    let (f, m) = bad(&format!(
        "{late}{}",
        expect_step("{ kind = \"listener-open\", upstream = \"cache\" }")
    ));
    assert_eq!(f, "steps[0].check.upstream");
    assert!(m.contains("add-upstream"), "{m}");
    good(&format!(
        "{late}\n[[steps]]\ndo = \"add-upstream\"\nname = \"cache\"\n{}",
        expect_step("{ kind = \"listener-open\", upstream = \"cache\" }")
    ));
    let (f, _) = bad("\n[[steps]]\ndo = \"add-upstream\"\nname = \"cache\"\n");
    assert_eq!(f, "steps[0].name");
}

#[test]
fn timeouts_are_named_or_go_durations() {
    let check = "{ kind = \"served-leaf\" }";
    good(&format!(
        "{}within = \"rotation\"\nstable_for = \"250ms\"\n",
        expect_step(check)
    ));
    let (f, m) = bad(&format!("{}within = \"propogation\"\n", expect_step(check)));
    assert_eq!(f, "steps[0].within");
    assert!(
        m.contains("neither a Go duration nor a named timeout"),
        "{m}"
    );
    let (f, _) = bad(&format!("{}stable_for = \"-1s\"\n", expect_step(check)));
    assert_eq!(f, "steps[0].stable_for");
    let (f, _) = bad("\n[[steps]]\ndo = \"idle\"\nduration = \"forever\"\nreason = \"r\"\n");
    assert_eq!(f, "steps[0].duration");
    let (f, _) = bad("\n[[steps]]\ndo = \"idle\"\nduration = \"idle\"\nreason = \"\"\n");
    assert_eq!(f, "steps[0].reason");
    let (f, _) = bad("\n[[steps]]\ndo = \"restart-agent\"\ndown_for = \"stable\"\n");
    assert_eq!(
        f, "steps[0].down_for",
        "setup-side durations are Go durations only"
    );
    let (f, _) = bad("\n[[steps]]\ndo = \"fault\"\nfault = \"agent-down\"\nfor = \"1 s\"\n");
    assert_eq!(f, "steps[0].for");
}

#[test]
fn checks_are_well_formed() {
    let (f, _) = bad(&expect_step(
        "{ kind = \"http\", path = \"/\", status = 200 }",
    ));
    assert_eq!(f, "steps[0].check");
    let web = "identity = { kind = \"service\", service = \"web\" }";
    let (f, _) = bad(&expect_step(&format!(
        "{{ kind = \"http\", {web}, path = \"x\", status = 200 }}"
    )));
    assert_eq!(f, "steps[0].check.path");
    let (f, _) = bad(&expect_step(&format!(
        "{{ kind = \"http\", {web}, path = \"/\", status = 99 }}"
    )));
    assert_eq!(f, "steps[0].check.status");
    let (f, _) = bad(&expect_step(&format!(
        "{{ kind = \"http\", {web}, method = \"get\", path = \"/\", status = 200 }}"
    )));
    assert_eq!(f, "steps[0].check.method");
    let (f, _) = bad(&expect_step(&format!(
        "{{ kind = \"http\", {web}, path = \"/\", status = 200, headers = {{ \"X Bad\" = \"1\" }} }}"
    )));
    assert_eq!(f, "steps[0].check.headers.\"X Bad\"");
    // app_path: with a 2xx on a new connection, and a path.
    for check in [
        format!("{{ kind = \"http\", {web}, path = \"/\", status = 403, app_path = \"/\" }}"),
        format!("{{ kind = \"http\", {web}, path = \"/\", status = 200, app_path = \"x\" }}"),
        format!("{{ kind = \"http\", {web}, path = \"/\", status = 200, app_path = \"/?q\" }}"),
    ] {
        let (f, _) = bad(&expect_step(&check));
        assert_eq!(f, "steps[0].check.app_path", "{check}");
    }
    good(&expect_step(&format!(
        "{{ kind = \"http\", {web}, path = \"/a/../b\", status = 200, app_path = \"/b\" }}"
    )));
    let (f, _) = bad(&expect_step("{ kind = \"agent-usage\" }"));
    assert_eq!(f, "steps[0].check");
    let (f, _) = bad(&expect_step(
        "{ kind = \"agent-usage\", blocking = [\"kv\"] }",
    ));
    assert_eq!(f, "steps[0].check.blocking[0]");
    let (f, _) = bad(&expect_step(
        "{ kind = \"agent-usage\", max_requests_per_minute = 0 }",
    ));
    assert_eq!(f, "steps[0].check.max_requests_per_minute");
    let (f, _) = bad(&expect_step("{ kind = \"index-reset-honoured\" }"));
    assert_eq!(f, "steps[0].check");
    good(&format!(
        "\n[[steps]]\ndo = \"index-reset\"\n{}",
        expect_step("{ kind = \"index-reset-honoured\" }")
    ));
    let (f, _) = bad(&expect_step(
        "{ kind = \"inbound\", identity = { kind = \"common-name-mismatch\", common_name = \"web\", service = \"web\" }, outcome = \"refused\" }",
    ));
    assert_eq!(f, "steps[0].check.identity.common_name");
}

#[test]
fn generators_own_the_intentions() {
    let g =
        "generate = { kind = \"random-intentions\", cases = 3, sources = [\"web\", \"api\"] }\n";
    good(g);
    let (f, _) =
        bad("generate = { kind = \"random-intentions\", cases = 0, sources = [\"web\"] }\n");
    assert_eq!(f, "generate.cases");
    let (f, _) = bad("generate = { kind = \"random-intentions\", cases = 1, sources = [] }\n");
    assert_eq!(f, "generate.sources");
    let (f, _) =
        bad("generate = { kind = \"random-intentions\", cases = 1, sources = [\"web\", \"*\"] }\n");
    assert_eq!(f, "generate.sources[1]");
    let (f, _) = bad(&format!(
        "generate = {{ kind = \"random-intentions\", cases = 1, sources = [\"{MARKER_SOURCE}\"] }}\n"
    ));
    assert_eq!(f, "generate.sources[0]");
    let (f, _) = bad(&format!(
        "{g}[[setup.intentions]]\nsource = \"web\"\naction = \"allow\"\n"
    ));
    assert_eq!(f, "setup.intentions");
    let (f, _) = bad(&format!(
        "{g}\n[[steps]]\ndo = \"delete-intention\"\nsource = \"web\"\n"
    ));
    assert_eq!(f, "steps[0]");
}

fn scenario(id: &str) -> Scenario {
    Scenario {
        id: id.into(),
        description: "d".into(),
        profile: Profile::Core,
        features: vec![],
        catches: vec![],
        setup: Setup::default(),
        steps: vec![],
        generate: None::<Generator>,
    }
}

#[test]
fn validate_alone_names_the_scenario_and_validate_all_wants_unique_ids() {
    let mut s = scenario("x");
    s.features = vec!["warp".into()];
    let e = validate(&s).unwrap_err();
    assert_eq!(
        (e.path.as_str(), e.line, e.field.as_deref()),
        ("x", None, Some("features[0]"))
    );
    assert_eq!(e.to_string(), format!("x: features[0]: {}", e.message));

    validate_all(&[scenario("a"), scenario("b")]).unwrap();
    let e = validate_all(&[scenario("a"), scenario("b"), scenario("a")]).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("id"));
    assert!(
        e.message.contains("duplicate scenario id \"a\""),
        "{}",
        e.message
    );
}

#[test]
fn transparent_checks_need_transparent_mode() {
    let up = "[[setup.upstreams]]\nname = \"cache\"\nimplicit = true\n[[setup.instances]]\nid = \"c1\"\nservice = \"cache\"\n";
    let vip = expect_step(
        "{ kind = \"upstream\", upstream = \"cache\", via = \"virtual-ip\", reach = [\"c1\"] }",
    );
    let (f, m) = bad(&format!("{up}{vip}"));
    assert_eq!(f, "setup.upstreams[0].implicit");
    assert!(m.contains("needs transparent mode"), "{m}");
    let explicit = up.replace("implicit = true\n", "");
    let (f, m) = bad(&format!("{explicit}{vip}"));
    assert_eq!(f, "steps[0].check.via");
    assert!(m.contains("needs transparent mode"), "{m}");
    good(&format!("[setup.transparent]\n{up}{vip}"));

    let app_port = expect_step(
        "{ kind = \"inbound\", via = \"app-port\", identity = { kind = \"no-cert\" }, outcome = \"refused\" }",
    );
    let (f, _) = bad(&app_port);
    assert_eq!(f, "steps[0].check.via");
    good(&format!("[setup.transparent]\n{app_port}"));

    for check in [
        "{ kind = \"unknown-destination\", outcome = \"refused\" }",
        "{ kind = \"no-redirect-loop\" }",
    ] {
        let (f, m) = bad(&expect_step(check));
        assert_eq!(f, "steps[0].check", "{check}");
        assert!(m.contains("needs transparent mode"), "{m}");
        good(&format!("[setup.transparent]\n{up}{}", expect_step(check)));
    }
    let (f, _) = bad("[setup.transparent]\noutbound_port = 0\n");
    assert_eq!(f, "setup.transparent.outbound_port");
    let (f, _) = bad("[setup.transparent]\noutbound_ports = 1\n");
    assert_eq!(f, "setup.transparent.outbound_ports");
    good("[setup.transparent]\noutbound_port = 15006\ndialed_directly = true\n");
    let (f, _) = bad(&expect_step(
        "{ kind = \"inbound\", via = \"sideways\", identity = { kind = \"no-cert\" }, outcome = \"refused\" }",
    ));
    assert_eq!(f, "steps[0].check.via");
}

#[test]
fn socket_upstreams_and_modes() {
    let (f, m) = bad("[[setup.upstreams]]\nname = \"cache\"\nsocket_mode = \"0600\"\n");
    assert_eq!(f, "setup.upstreams[0].socket_mode");
    assert!(m.contains("socket = true"), "{m}");
    for mode in ["0800", "rw", "", "01777", "0o1000"] {
        let body = format!(
            "[[setup.upstreams]]\nname = \"cache\"\nsocket = true\nsocket_mode = \"{mode}\"\n"
        );
        let (f, _) = bad(&body);
        assert_eq!(f, "setup.upstreams[0].socket_mode", "{mode:?}");
    }
    for mode in ["0600", "600", "0o755", "0777"] {
        good(&format!(
            "[[setup.upstreams]]\nname = \"cache\"\nsocket = true\nsocket_mode = \"{mode}\"\n"
        ));
    }
    good("[setup]\napp_socket = true\n");
    assert_eq!(parse_socket_mode("0600"), Some(0o600));
    assert_eq!(parse_socket_mode("0o755"), Some(0o755));
    assert_eq!(parse_socket_mode("1000"), None);
}

#[test]
fn ca_setup_and_ca_steps() {
    good("[setup.ca]\nkey_type = \"rsa\"\nkey_bits = 4096\nintermediate = true\n");
    good("[setup.ca]\nkey_bits = 384\n");
    good("[setup.ca]\nintermediate = true\nwithout_spiffe_san = true\n");
    good(
        "[setup.agent_tls]\nverify_incoming = true\n\n[[steps]]\ndo = \"agent-server-cert\"\nca = \"untrusted\"\n",
    );
    let (f, m) = bad("[[steps]]\ndo = \"agent-server-cert\"\nca = \"agent\"\n");
    assert_eq!(f, "steps[0].ca");
    assert!(m.contains("[setup.agent_tls]"), "{m}");
    good(
        "[[steps]]\ndo = \"rotate-ca\"\nkey_type = \"rsa\"\n\n[[steps]]\ndo = \"rotate-intermediate\"\n",
    );
    good(&expect_step(
        "{ kind = \"served-leaf\", key_type = \"ec\", key_bits = 384, full_chain = true }",
    ));
    let (f, m) = bad("[setup.ca]\nkey_type = \"dsa\"\n");
    assert_eq!(f, "setup.ca.key_type");
    assert!(m.contains("must be \"ec\" or \"rsa\""), "{m}");
    let (f, m) = bad("[setup.ca]\nkey_type = \"rsa\"\nkey_bits = 1024\n");
    assert_eq!(f, "setup.ca.key_bits");
    assert_eq!(m, "rsa keys must have [2048, 4096] bits, not 1024");
    let (f, m) = bad("[[steps]]\ndo = \"rotate-ca\"\nkey_bits = 521\n");
    assert_eq!(f, "steps[0].key_bits");
    assert_eq!(m, "ec keys must have [256, 384] bits, not 521");
    let (f, _) = bad("[setup.ca]\nkey_size = 2048\n");
    assert!(f.starts_with("setup.ca"), "{f}");
}
