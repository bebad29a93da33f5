//! JSON round trip, snapshot of the canonical form, and schema-version checks.

use super::*;
use crate::fixture::sample_report;

#[test]
fn round_trips() {
    let report = sample_report();
    let text = to_json(&report);
    assert_eq!(Report::from_json(&text).unwrap(), report);
    // And the text itself is stable across a round trip.
    assert_eq!(to_json(&Report::from_json(&text).unwrap()), text);
}

#[test]
fn sample_report_snapshot() {
    insta::assert_snapshot!(to_json(&sample_report()));
}

fn with_version(version: Value) -> String {
    let mut v: Value = serde_json::from_str(&to_json(&sample_report())).unwrap();
    v["schema_version"] = version;
    v.to_string()
}

#[test]
fn rejects_another_major_version() {
    for found in ["2", "2.0", "0.9", "", "v1", "10"] {
        let err = Report::from_json(&with_version(found.into())).unwrap_err();
        assert_eq!(err.kind(), "unsupported_schema_version", "{found}");
        assert_eq!(
            err.to_string(),
            format!(
                "unsupported report schema version {found:?}: this build reads major version 1 \
                 (writes {SCHEMA_VERSION:?}); use a harness of the matching version"
            )
        );
    }
}

#[test]
fn version_is_checked_before_the_shape() {
    // A future major may look completely different: the version error wins.
    let err = Report::from_json(r#"{"schema_version":"2","scenarios":"elsewhere"}"#).unwrap_err();
    assert_eq!(err.kind(), "unsupported_schema_version");
}

#[test]
fn accepts_a_newer_minor_with_extra_fields() {
    let mut v: Value = serde_json::from_str(&to_json(&sample_report())).unwrap();
    v["schema_version"] = "1.9".into();
    v["added_in_1_9"] = serde_json::json!({"anything": true});
    v["scenarios"][0]["also_new"] = 5.into();
    let r = Report::from_json(&v.to_string()).unwrap();
    assert_eq!(r.schema_version, "1.9");
    assert_eq!(r.scenarios, sample_report().scenarios);
}

#[test]
fn missing_or_non_string_version() {
    for text in [r#"{"harness":{}}"#, r#"{"schema_version":1}"#, "[]", "null"] {
        let err = Report::from_json(text).unwrap_err();
        assert_eq!(err.kind(), "missing_schema_version", "{text}");
    }
}

#[test]
fn not_json() {
    let err = Report::from_json("{\n  \"schema_version\": \"1\",\n  oops").unwrap_err();
    assert_eq!(err.kind(), "invalid_json");
    assert!(
        matches!(err, ReportError::InvalidJson { line: 3, .. }),
        "{err}"
    );
}

#[test]
fn schema_mismatch_names_the_path() {
    let mut v: Value = serde_json::from_str(&to_json(&sample_report())).unwrap();
    v["scenarios"][2]["checks"][1]["verdict"] = "failed".into();
    let err = Report::from_json(&v.to_string()).unwrap_err();
    assert_eq!(err.kind(), "invalid_report");
    let ReportError::InvalidReport { path, message } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(path, "scenarios[2].checks[1].verdict");
    assert!(message.contains("unknown variant `failed`"), "{message}");
}

#[test]
fn a_version_1_report_without_xds_tls_mode_still_reads() {
    let mut v: Value = serde_json::from_str(&to_json(&sample_report())).unwrap();
    v["schema_version"] = "1".into();
    let proxy = v["proxy"].as_object_mut().unwrap();
    assert!(proxy.remove("xds_tls_mode").is_some());
    let r = Report::from_json(&v.to_string()).unwrap();
    assert_eq!(r.proxy.xds_tls_mode, None);

    let mut with = sample_report();
    with.proxy.xds_tls_mode = Some("sds".into());
    let back = Report::from_json(&to_json(&with)).unwrap();
    assert_eq!(back.proxy.xds_tls_mode.as_deref(), Some("sds"));
}

#[test]
fn a_1_2_report_without_links_still_reads() {
    let mut v: Value = serde_json::from_str(&to_json(&sample_report())).unwrap();
    v["schema_version"] = "1.2".into();
    for s in v["scenarios"].as_array_mut().unwrap() {
        let o = s.as_object_mut().unwrap();
        o.remove("catalogue");
        o.remove("docs");
    }
    let r = Report::from_json(&v.to_string()).unwrap();
    assert_eq!(r.scenarios[0].catalogue, None);
    assert!(r.scenarios[0].docs.is_empty());
}
