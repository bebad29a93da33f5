//! `proxy-log` checks, transparent exclusions and their targets, and `ipv6`.

use super::{bad, expect_step, good};

#[test]
fn proxy_log_checks_name_some_text() {
    good(&expect_step(
        "{ kind = \"proxy-log\", contains = [\"permission denied\"] }",
    ));
    let (f, m) = bad(&expect_step("{ kind = \"proxy-log\", contains = [] }"));
    assert_eq!(f, "steps[0].check.contains", "{m}");
    let (f, _) = bad(&expect_step(
        "{ kind = \"proxy-log\", contains = [\"x\", \" \"] }",
    ));
    assert_eq!(f, "steps[0].check.contains[1]");
}

#[test]
fn excluded_targets_need_their_exclusion() {
    let tproxy = |exclude: &str, check: &str| {
        format!(
            "[setup.transparent]\nexclude = [{exclude}]\n{}",
            expect_step(check)
        )
    };
    let via = "{ kind = \"inbound\", via = \"excluded-port\", identity = { kind = \"no-cert\" }, outcome = \"allowed\" }";
    good(&tproxy("\"inbound-port\"", via));
    let (f, m) = bad(&tproxy("\"outbound-port\"", via));
    assert_eq!(f, "steps[0].check.via");
    assert!(m.contains("inbound-port"), "{m}");
    let to = "{ kind = \"unknown-destination\", to = \"excluded-cidr\", outcome = \"allowed\" }";
    good(&tproxy("\"outbound-cidr\"", to));
    let (f, _) = bad(&tproxy("\"outbound-port\"", to));
    assert_eq!(f, "steps[0].check.to");
    let uid = "{ kind = \"unknown-destination\", as_excluded_uid = true, outcome = \"allowed\" }";
    good(&tproxy("\"uid\"", uid));
    let (f, _) = bad(&tproxy("", uid));
    assert_eq!(f, "steps[0].check.as_excluded_uid");
    let (f, _) = bad(&tproxy("\"ssh\"", to));
    assert!(f.starts_with("setup.transparent.exclude"), "{f}");
}

#[test]
fn ipv6_is_for_tcp_apps_outside_transparent_mode() {
    good("[setup]\nipv6 = true\n");
    let (f, _) = bad("[setup]\nipv6 = true\napp_socket = true\n");
    assert_eq!(f, "setup.ipv6");
    let (f, _) = bad("[setup]\nipv6 = true\n[setup.transparent]\n");
    assert_eq!(f, "setup.ipv6");
}
