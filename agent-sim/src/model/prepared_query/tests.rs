//! Tests of the prepared-query model: decoding, Consul's validation texts, templates, filters.

use super::*;

fn query(json: &str) -> PreparedQuery {
    decode(json.as_bytes()).expect("decodes")
}

#[test]
fn decodes_case_blind_and_ignores_unknown_keys() {
    let q = query(
        r#"{"name":"q","service":{"service":"db","onlypassing":true,"Tags":["a","!b"]},"Bogus":1,"DNS":null}"#,
    );
    assert_eq!(q.name, "q");
    assert_eq!(q.service.service, "db");
    assert!(q.service.only_passing);
    assert_eq!(q.service.tags, Some(vec!["a".into(), "!b".into()]));
    assert_eq!(
        decode(b"").unwrap_err().to_string(),
        "EOF",
        "an empty body is Go's EOF"
    );
}

#[test]
fn serializes_in_go_field_order_with_nil_slices() {
    let q = query(r#"{"Name":"q","Service":{"Service":"db"}}"#);
    let text = serde_json::to_string(&q).unwrap();
    insta::assert_snapshot!(text, @r#"{"ID":"","Name":"q","Session":"","Token":"","Template":{"Type":"","Regexp":"","RemoveEmptyTags":false},"Service":{"Service":"db","SamenessGroup":"","Failover":{"NearestN":0,"Datacenters":null,"Targets":null},"OnlyPassing":false,"IgnoreCheckIDs":null,"Near":"","Tags":null,"NodeMeta":null,"ServiceMeta":null,"Connect":false,"Peer":""},"DNS":{"TTL":""},"CreateIndex":0,"ModifyIndex":0}"#);
}

#[test]
fn validation_texts_are_consuls() {
    let cases = [
        (
            r#"{"Service":{"Service":"db"}}"#,
            "Must be bound to a session",
        ),
        (
            r#"{"Name":"q","Token":"<hidden>","Service":{"Service":"db"}}"#,
            "Bad Token '<hidden>', it looks like a query definition with a redacted token was submitted",
        ),
        (r#"{"Name":"q"}"#, "Must provide a Service name to query"),
        (
            r#"{"Name":"q","Service":{"Service":"db","Failover":{"NearestN":-1}}}"#,
            "Bad NearestN '-1', must be >= 0",
        ),
        (
            r#"{"Name":"q","Service":{"Service":"db","Failover":{"Datacenters":["dc2"],"Targets":[{"Peer":"p"}]}}}"#,
            "Targets cannot be populated with NearestN or Datacenters",
        ),
        (
            r#"{"Name":"q","Service":{"Service":"db","NodeMeta":{"a b":"v"}}}"#,
            "Couldn't load metadata pair ('a b', 'v'): Key contains invalid characters",
        ),
        (
            r#"{"Name":"q","Service":{"Service":"db"},"DNS":{"TTL":"soon"}}"#,
            "Bad DNS TTL 'soon': time: invalid duration \"soon\"",
        ),
        (
            r#"{"Name":"q","Service":{"Service":"db"},"DNS":{"TTL":"-5s"}}"#,
            "DNS TTL '-5000000000', must be >=0",
        ),
    ];
    for (body, want) in cases {
        assert_eq!(validate(&query(body)).unwrap_err(), want, "{body}");
    }
    // consul- node meta keys are allowed in queries (ValidateNodeMetadata(meta, true)).
    validate(&query(
        r#"{"Name":"q","Service":{"Service":"db","NodeMeta":{"consul-x":"v"}},"DNS":{"TTL":"10s"}}"#,
    ))
    .unwrap();
    // A template needs no name.
    validate(&query(
        r#"{"Template":{"Type":"name_prefix_match"},"Service":{"Service":"${name.full}"}}"#,
    ))
    .unwrap();
}

#[test]
fn acl_prefix_and_redaction() {
    let named = query(r#"{"Name":"q","Token":"secret","Service":{"Service":"db"}}"#);
    assert_eq!(named.acl_prefix(), Some("q"));
    assert_eq!(named.redacted().token, REDACTED_TOKEN);
    let anon = query(r#"{"Session":"s","Service":{"Service":"db"}}"#);
    assert_eq!(anon.acl_prefix(), None);
    assert_eq!(anon.redacted().token, "", "an empty token stays visible");
    let tmpl = query(r#"{"Template":{"Type":"name_prefix_match"},"Service":{"Service":"x"}}"#);
    assert_eq!(tmpl.acl_prefix(), Some(""));
}

#[test]
fn templates_interpolate_like_consul() {
    let q = query(
        r#"{"Name":"geo-","Template":{"Type":"name_prefix_match","Regexp":"^geo-(\\w+)-(\\w+)$","RemoveEmptyTags":true},
           "Service":{"Service":"${match(1)}","Tags":["${match(2)}","${match(7)}","x-${name.suffix}"],
                      "NodeMeta":{"seg":"${agent.segment}"},"Near":"${name.full}|${name.prefix}|$${literal}"}}"#,
    );
    let ct = CompiledTemplate::compile(&q).unwrap();
    let r = ct.render("geo-db-primary", "alpha").unwrap();
    assert_eq!(r.service.service, "db");
    assert_eq!(
        r.service.tags,
        Some(vec!["primary".into(), "x-db-primary".into()]),
        "empty tags removed"
    );
    assert_eq!(r.service.node_meta.unwrap()["seg"], "alpha");
    assert_eq!(r.service.near, "geo-db-primary|geo-|${literal}");
    // No regexp match: every match() is empty.
    let r = ct.render("geo-nope", "").unwrap();
    assert_eq!(r.service.service, "");
}

#[test]
fn template_errors_are_consuls() {
    let bad_type = query(r#"{"Template":{"Type":"nope"},"Service":{"Service":"x"}}"#);
    assert_eq!(
        CompiledTemplate::compile(&bad_type).unwrap_err().0,
        "Bad Template.Type 'nope'"
    );
    let unknown =
        query(r#"{"Template":{"Type":"name_prefix_match"},"Service":{"Service":"${foo}"}}"#);
    assert_eq!(
        CompiledTemplate::compile(&unknown).unwrap_err().0,
        "Bad evaluation for '${foo}' in Service.Service: 1:3: unknown variable accessed: foo"
    );
    let unclosed = query(
        r#"{"Template":{"Type":"name_prefix_match"},"Service":{"Service":"x","Tags":["${name.full"]}}"#,
    );
    let e = CompiledTemplate::compile(&unclosed).unwrap_err().0;
    assert!(
        e.starts_with("Bad format '${name.full' in Service.Tags[0]: "),
        "{e}"
    );
    let bad_re = query(
        r#"{"Template":{"Type":"name_prefix_match","Regexp":"(a"},"Service":{"Service":"x"}}"#,
    );
    let e = CompiledTemplate::compile(&bad_re).unwrap_err().0;
    assert!(e.starts_with("Bad Regexp: error parsing regexp: "), "{e}");
}

fn check(id: &str, status: &str) -> HealthCheck {
    HealthCheck {
        check_id: id.into(),
        status: status.into(),
        ..Default::default()
    }
}

#[test]
fn execute_filters() {
    let mut svc = NodeService {
        tags: vec!["Primary".into(), "v2".into()],
        ..Default::default()
    };
    svc.meta.insert("zone".into(), "a".into());
    let node_meta = BTreeMap::from([("rack".to_owned(), "r1".to_owned())]);
    let keeps_with = |q: &str, checks: &[HealthCheck]| {
        let refs: Vec<&HealthCheck> = checks.iter().collect();
        let c = Candidate {
            node_meta: &node_meta,
            service: &svc,
            checks: &refs,
        };
        keeps(&query(q).service, &c)
    };
    let passing = [check("a", "passing")];
    let warning = [check("a", "warning")];
    let critical = [check("a", "critical"), check("b", "passing")];
    assert!(keeps_with(r#"{"Service":{"Service":"s"}}"#, &warning));
    assert!(!keeps_with(
        r#"{"Service":{"Service":"s","OnlyPassing":true}}"#,
        &warning
    ));
    assert!(!keeps_with(r#"{"Service":{"Service":"s"}}"#, &critical));
    assert!(keeps_with(
        r#"{"Service":{"Service":"s","IgnoreCheckIDs":["a"]}}"#,
        &critical
    ));
    assert!(keeps_with(
        r#"{"Service":{"Service":"s","Tags":["primary","!v1"]}}"#,
        &passing
    ));
    assert!(!keeps_with(
        r#"{"Service":{"Service":"s","Tags":["!V2"]}}"#,
        &passing
    ));
    assert!(!keeps_with(
        r#"{"Service":{"Service":"s","Tags":["v3"]}}"#,
        &passing
    ));
    assert!(keeps_with(
        r#"{"Service":{"Service":"s","NodeMeta":{"rack":"r1"},"ServiceMeta":{"zone":"a"}}}"#,
        &passing
    ));
    assert!(!keeps_with(
        r#"{"Service":{"Service":"s","NodeMeta":{"rack":"r2"}}}"#,
        &passing
    ));
    assert!(!keeps_with(
        r#"{"Service":{"Service":"s","ServiceMeta":{"zone":"b"}}}"#,
        &passing
    ));
}

#[test]
fn uuids() {
    assert!(is_uuid("8f246b77-f3e1-ff88-5b48-8ec93abf3e05"));
    assert!(!is_uuid("geo-db"));
    assert!(!is_uuid("8f246b77-f3e1-ff88-5b48-8ec93abf3e0z"));
}
