//! Error texts: Consul's body for a filter it cannot create or evaluate.

use super::support::{agent_typical, health_entry};
use crate::filter::{
    AGENT_SERVICE_FIELDS, CATALOG_SERVICE_FIELDS, Filter, FilterError, HEALTH_ENTRY_FIELDS,
};

const PREFIX: &str = "Failed to create boolean expression evaluator: ";

fn parse_error(expr: &str, fields: &'static [&'static str]) -> String {
    match Filter::parse_for(expr, fields) {
        Ok(_) => panic!("{expr:?} should not parse"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn syntax_errors_carry_consuls_prefix() {
    assert_eq!(
        parse_error("Service.Meta.version = v1", HEALTH_ENTRY_FIELDS),
        format!(
            r#"{PREFIX}1:22 (21): no match found, expected: "!=", "==", "contains", "in", "is", "matches", "not" or [ \t\r\n]"#
        )
    );
    assert!(matches!(
        Filter::parse("x in 32"),
        Err(FilterError::Syntax(m)) if m == r#"1:6 (5): rule "match": Invalid selector"#
    ));
}

#[test]
fn unknown_top_level_fields_fail_before_any_data() {
    let cases = [
        ("Foo == bar", HEALTH_ENTRY_FIELDS, "Foo"),
        ("Node.Node == n1 and Kind == x", HEALTH_ENTRY_FIELDS, "Kind"),
        // Tagged bexpr:"-" in api.AgentService / structs.ServiceNode.
        ("Datacenter == dc1", AGENT_SERVICE_FIELDS, "Datacenter"),
        ("ContentHash == x", AGENT_SERVICE_FIELDS, "ContentHash"),
        ("CreateIndex == 1", CATALOG_SERVICE_FIELDS, "CreateIndex"),
        (
            "ServiceLocality is empty",
            CATALOG_SERVICE_FIELDS,
            "ServiceLocality",
        ),
        ("x in Checks or Foo.Bar == 1", HEALTH_ENTRY_FIELDS, "Foo"),
    ];
    for (expr, fields, sel) in cases {
        assert_eq!(
            parse_error(expr, fields),
            format!("{PREFIX}Selector \"{sel}\" is not valid"),
            "{expr}"
        );
    }
}

#[test]
fn untyped_filters_reject_keys_the_item_lacks() {
    let f = Filter::parse("Foo == bar or Service.ID == x").unwrap();
    assert_eq!(
        f.matches(&health_entry()).unwrap_err().to_string(),
        format!("{PREFIX}Selector \"Foo\" is not valid")
    );
    // With the field list, a listed field the item omits is a zero value, not an error.
    let typed = Filter::parse_for("Kind == x", AGENT_SERVICE_FIELDS).unwrap();
    assert!(!typed.matches(&agent_typical()).unwrap());
}

#[test]
fn type_errors_are_consuls_validation_messages() {
    let cases = [
        (
            "Service.Tags == v1",
            r#"Invalid match operator "Equal" for selector "Service.Tags""#,
        ),
        (
            "Service.Weights is empty",
            r#"Invalid match operator "Is Empty" for selector "Service.Weights""#,
        ),
        (
            "Service.ID is not empty",
            r#"Invalid match operator "Is Not Empty" for selector "Service.ID""#,
        ),
        (
            "Service.Port contains 2",
            r#"Invalid match operator "In" for selector "Service.Port""#,
        ),
        (
            "Service.Meta != x",
            r#"Invalid match operator "Not Equal" for selector "Service.Meta""#,
        ),
        (
            "x not in Checks",
            r#"Invalid match operator "Not In" for selector "Checks""#,
        ),
        (
            "Service.Port matches x",
            r#"Invalid match operator "Matches" for selector "Service.Port""#,
        ),
        (
            "Service.ID.Foo == x",
            r#"Selector "Service.ID.Foo" is not valid"#,
        ),
        (
            "Checks.Status.Foo == x",
            r#"Selector "Checks.Status.Foo" is not valid"#,
        ),
        (
            "Service.Tags.Foo == x",
            r#"Selector "Service.Tags.Foo" is not valid"#,
        ),
        (
            "Service.Port == abc",
            r#"Failed to coerce value "abc" for selector "Service.Port": strconv.ParseInt: parsing "abc": invalid syntax"#,
        ),
        (
            "Service.Port == 1.5",
            r#"Failed to coerce value "1.5" for selector "Service.Port": strconv.ParseInt: parsing "1.5": invalid syntax"#,
        ),
        (
            "Service.EnableTagOverride == yes",
            r#"Failed to coerce value "yes" for selector "Service.EnableTagOverride": strconv.ParseBool: parsing "yes": invalid syntax"#,
        ),
    ];
    let entry = health_entry();
    for (expr, want) in cases {
        let f = Filter::parse_for(expr, HEALTH_ENTRY_FIELDS).unwrap();
        assert_eq!(
            f.matches(&entry).unwrap_err().to_string(),
            format!("{PREFIX}{want}"),
            "{expr}"
        );
    }
}

#[test]
fn short_circuits_before_reaching_an_error() {
    let f =
        Filter::parse_for("Node.Node == n1 or Service.Tags == v1", HEALTH_ENTRY_FIELDS).unwrap();
    assert!(f.matches(&health_entry()).unwrap());
    let f = Filter::parse_for(
        "Node.Node == n2 and Service.Tags == v1",
        HEALTH_ENTRY_FIELDS,
    )
    .unwrap();
    assert!(!f.matches(&health_entry()).unwrap());
}

#[test]
fn bad_regular_expressions_fail_at_parse() {
    let e = parse_error(r#"Service.ID matches "(""#, HEALTH_ENTRY_FIELDS);
    assert!(
        e.starts_with(&format!(
            "{PREFIX}Failed to compile regular expression \"(\": error parsing regexp: "
        )),
        "{e}"
    );
    assert!(e.ends_with(": `(`"), "{e}");
    assert!(!e.contains('\n'), "one line: {e}");
}
