//! Tests for check validation, type names, duration decoding and status helpers.

use super::*;

fn secs(n: i64) -> GoDuration {
    GoDuration(n * 1_000_000_000)
}

#[test]
fn validate_uses_consuls_texts() {
    let ttl_missing = CheckDefinition {
        name: "x".into(),
        ..Default::default()
    };
    let cases = [
        (ttl_missing, "TTL must be > 0 for TTL checks"),
        (
            CheckDefinition {
                interval: secs(1),
                ttl: secs(1),
                ..Default::default()
            },
            "Interval and TTL cannot both be specified",
        ),
        (
            CheckDefinition {
                tcp: "127.0.0.1:1".into(),
                ..Default::default()
            },
            "Interval must be > 0 for Script, HTTP, H2PING, TCP, UDP or OSService checks",
        ),
        (
            CheckDefinition {
                tcp: "127.0.0.1:1".into(),
                interval: secs(1),
                alias_service: "web".into(),
                ..Default::default()
            },
            "Interval cannot be set for Alias checks",
        ),
        (
            CheckDefinition {
                alias_service: "web".into(),
                ttl: secs(1),
                ..Default::default()
            },
            "TTL must be not be set for Alias checks",
        ),
        (
            CheckDefinition {
                ttl: secs(1),
                failures_before_warning: 2,
                failures_before_critical: 1,
                ..Default::default()
            },
            "FailuresBeforeWarning can't be higher than FailuresBeforeCritical",
        ),
    ];
    for (check, want) in cases {
        assert_eq!(check.validate(), Err(want.to_owned()), "{check:?}");
    }
    let alias = CheckDefinition {
        alias_service: "web".into(),
        ..Default::default()
    };
    assert_eq!(alias.validate(), Ok(()));
    let ttl = CheckDefinition {
        ttl: secs(30),
        ..Default::default()
    };
    assert_eq!(ttl.validate(), Ok(()));
}

#[test]
fn type_names_follow_consuls_precedence() {
    let base = CheckDefinition {
        interval: secs(10),
        ..Default::default()
    };
    let cases = [
        (
            CheckDefinition {
                grpc: "g".into(),
                http: "h".into(),
                ..base.clone()
            },
            "grpc",
        ),
        (
            CheckDefinition {
                http: "h".into(),
                ..base.clone()
            },
            "http",
        ),
        (
            CheckDefinition {
                ttl: secs(5),
                ..Default::default()
            },
            "ttl",
        ),
        (
            CheckDefinition {
                tcp: "a:1".into(),
                ..base.clone()
            },
            "tcp",
        ),
        (
            CheckDefinition {
                udp: "a:1".into(),
                ..base.clone()
            },
            "udp",
        ),
        (
            CheckDefinition {
                alias_service: "web".into(),
                ..Default::default()
            },
            "alias",
        ),
        (
            CheckDefinition {
                script_args: vec!["true".into()],
                docker_container_id: "c".into(),
                ..base.clone()
            },
            "docker",
        ),
        (
            CheckDefinition {
                script_args: vec!["true".into()],
                ..base.clone()
            },
            "script",
        ),
        (
            CheckDefinition {
                h2ping: "a:1".into(),
                ..base.clone()
            },
            "h2ping",
        ),
        (
            CheckDefinition {
                os_service: "svc".into(),
                ..base.clone()
            },
            "os_service",
        ),
        (
            CheckDefinition {
                tcp: "a:1".into(),
                ..Default::default()
            },
            "",
        ),
    ];
    for (check, want) in cases {
        assert_eq!(check.type_name(), want, "{check:?}");
    }
}

#[test]
fn durations_accept_go_strings_and_nanoseconds() {
    let v = |j: &str| serde_json::from_str::<Value>(j).unwrap();
    assert_eq!(go_duration_field(Some(&v(r#""10s""#))), Ok(secs(10)));
    assert_eq!(
        go_duration_field(Some(&v("1500000000"))),
        Ok(GoDuration(1_500_000_000))
    );
    assert_eq!(go_duration_field(Some(&v("2.9"))), Ok(GoDuration(2)));
    assert_eq!(
        go_duration_field(Some(&v("true"))),
        Ok(GoDuration(0)),
        "other types are ignored"
    );
    assert_eq!(go_duration_field(None), Ok(GoDuration(0)));
    assert_eq!(
        go_duration_field(Some(&v(r#""ten""#))),
        Err(r#"time: invalid duration "ten""#.to_owned())
    );
}

#[test]
fn raw_check_applies_aliases_and_defaults() {
    let raw: RawCheck = serde_json::from_str(
        r#"{"Args":["/bin/true"],"H2PING":"localhost:1","Interval":"5s","Timeout":"1s"}"#,
    )
    .unwrap();
    let def = raw.into_definition().unwrap();
    assert_eq!(def.script_args, vec!["/bin/true"]);
    assert!(def.h2ping_use_tls, "H2PING defaults H2PingUseTLS to true");
    assert_eq!(def.interval, secs(5));
    assert_eq!(def.timeout, secs(1));

    let raw: RawCheck =
        serde_json::from_str(r#"{"H2PING":"localhost:1","H2PingUseTLS":false}"#).unwrap();
    assert!(
        !raw.into_definition().unwrap().h2ping_use_tls,
        "an explicit false wins"
    );
}

fn check(id: &str, status: &str) -> HealthCheck {
    HealthCheck {
        check_id: id.into(),
        status: status.into(),
        ..Default::default()
    }
}

#[test]
fn status_helpers() {
    let pass = check("a", HEALTH_PASSING);
    let warn = check("b", HEALTH_WARNING);
    let crit = check("c", HEALTH_CRITICAL);
    let maint = check("_service_maintenance:web", HEALTH_CRITICAL);
    assert!(is_passing(&[]));
    assert!(is_passing(&[&pass]));
    assert!(!is_passing(&[&pass, &warn]));
    assert_eq!(aggregated_status(&[]), HEALTH_PASSING);
    assert_eq!(aggregated_status(&[&pass, &warn]), HEALTH_WARNING);
    assert_eq!(aggregated_status(&[&warn, &crit]), HEALTH_CRITICAL);
    assert_eq!(aggregated_status(&[&crit, &maint]), HEALTH_MAINTENANCE);
    assert_eq!(aggregated_status(&[&check("d", "bogus")]), "");
    assert!(valid_status("warning"));
    assert!(!valid_status("maintenance"));
}
