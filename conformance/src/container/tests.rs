//! Image references (no Docker needed); the container lifecycle itself is exercised by
//! `tests/docker.rs` where a daemon runs.

use super::*;

#[test]
fn parses_name_and_tag() {
    let r = |s: &str| ImageRef::parse(s).map(|r| (r.name, r.tag));
    assert_eq!(
        r("proxy-under-test").unwrap(),
        ("proxy-under-test".into(), "latest".into())
    );
    assert_eq!(
        r("conformance/envoy:1.40.0").unwrap(),
        ("conformance/envoy".into(), "1.40.0".into())
    );
    assert_eq!(
        r("localhost:5000/proxy").unwrap(),
        ("localhost:5000/proxy".into(), "latest".into())
    );
    assert_eq!(
        r("localhost:5000/proxy:v2").unwrap(),
        ("localhost:5000/proxy".into(), "v2".into())
    );
    assert_eq!(ImageRef::parse(" a:b ").unwrap().to_string(), "a:b");
}

#[test]
fn rejects_what_it_cannot_run() {
    for bad in ["", "  ", "a b", "proxy:", "proxy@sha256:abcd"] {
        let e = ImageRef::parse(bad).expect_err(bad);
        assert_eq!(e.kind(), "usage", "{bad}");
    }
}
