//! Implicit upstreams (transparent mode, from intentions): where they may appear, and which
//! checks may name them.

use super::{bad, expect_step, good};

const TRANSPARENT: &str = "[setup.transparent]\n";
const IMPLICIT: &str = "[[setup.upstreams]]\nname = \"cache\"\nimplicit = true\n[[setup.instances]]\nid = \"c1\"\nservice = \"cache\"\n";
const VIP: &str =
    "{ kind = \"upstream\", upstream = \"cache\", via = \"virtual-ip\", reach = [\"c1\"] }";

#[test]
fn an_implicit_upstream_is_a_plain_service_of_a_transparent_proxy() {
    good(&format!("{TRANSPARENT}{IMPLICIT}{}", expect_step(VIP)));
    for (extra, field) in [
        ("socket = true\n", "socket"),
        ("prepared_query = true\n", "prepared_query"),
        ("initial = false\n", "initial"),
    ] {
        let body = IMPLICIT.replace("implicit = true\n", &format!("implicit = true\n{extra}"));
        let (f, m) = bad(&format!("{TRANSPARENT}{body}"));
        assert_eq!(f, format!("setup.upstreams[0].{field}"), "{m}");
    }
    let (f, m) = bad(IMPLICIT);
    assert_eq!(f, "setup.upstreams[0].implicit");
    assert!(m.contains("[setup.transparent]"), "{m}");
    let own = "[[setup.intentions]]\nsource = \"db\"\ndestination = \"cache\"\naction = \"deny\"\n";
    let (f, m) = bad(&format!("{TRANSPARENT}{IMPLICIT}{own}"));
    assert_eq!(f, "setup.upstreams[0].implicit");
    assert!(m.contains("db -> <name>"), "{m}");
}

#[test]
fn only_a_virtual_ip_dial_reaches_an_implicit_upstream() {
    for check in [
        "{ kind = \"upstream\", upstream = \"cache\", reach = [\"c1\"] }",
        "{ kind = \"listener-open\", upstream = \"cache\" }",
        "{ kind = \"upstream-refused\", upstream = \"cache\" }",
    ] {
        let (f, m) = bad(&format!("{TRANSPARENT}{IMPLICIT}{}", expect_step(check)));
        assert_eq!(f, "steps[0].check.upstream", "{check}");
        assert!(m.contains("is implicit"), "{m}");
    }
    let explicit = IMPLICIT.replace("implicit = true\n", "");
    let (f, m) = bad(&format!("{TRANSPARENT}{explicit}{}", expect_step(VIP)));
    assert_eq!(f, "steps[0].check.upstream");
    assert!(
        m.contains("is explicit") && m.contains("implicit = true"),
        "{m}"
    );
    let (f, m) = bad(&format!(
        "{TRANSPARENT}{explicit}{}",
        expect_step("{ kind = \"no-redirect-loop\" }")
    ));
    assert_eq!(f, "steps[0].check");
    assert!(m.contains("implicit = true"), "{m}");
}
