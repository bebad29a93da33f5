//! The `service-router` config entry: HTTP match rules and route destinations, with the
//! route validation texts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::common::{
    HEADER_MODIFIERS, HttpHeaderModifiers, is_false, is_zero_i64, is_zero_u32, ser_duration_string,
    validate_meta,
};
use super::path_match::validate_path_match;
use super::permissions::is_valid_http_method;
use super::{go_quote, multierror};
use crate::go::mapstructure::{Field, Schema, Ty};

/// A `service-router` entry. `Routes` has no `omitempty`: `null` when never set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServiceRouter {
    #[serde(rename = "Kind")]
    pub kind: String,
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "Routes")]
    pub routes: Option<Vec<ServiceRoute>>,
    #[serde(rename = "Meta", skip_serializing_if = "BTreeMap::is_empty")]
    pub meta: BTreeMap<String, String>,
    #[serde(rename = "Hash", skip_serializing)]
    pub hash: u64,
    #[serde(rename = "CreateIndex", skip_deserializing)]
    pub create_index: u64,
    #[serde(rename = "ModifyIndex", skip_deserializing)]
    pub modify_index: u64,
}

/// `ServiceRoute`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServiceRoute {
    #[serde(rename = "Match", skip_serializing_if = "Option::is_none")]
    pub matches: Option<RouteMatch>,
    #[serde(rename = "Destination", skip_serializing_if = "Option::is_none")]
    pub destination: Option<RouteDestination>,
}

/// `ServiceRouteMatch`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RouteMatch {
    #[serde(rename = "HTTP", skip_serializing_if = "Option::is_none")]
    pub http: Option<RouteHttpMatch>,
}

/// `ServiceRouteHTTPMatch`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RouteHttpMatch {
    #[serde(rename = "PathExact", skip_serializing_if = "String::is_empty")]
    pub path_exact: String,
    #[serde(rename = "PathPrefix", skip_serializing_if = "String::is_empty")]
    pub path_prefix: String,
    #[serde(rename = "PathRegex", skip_serializing_if = "String::is_empty")]
    pub path_regex: String,
    #[serde(rename = "CaseInsensitive", skip_serializing_if = "is_false")]
    pub case_insensitive: bool,
    #[serde(rename = "Header", skip_serializing_if = "Vec::is_empty")]
    pub header: Vec<RouteHeaderMatch>,
    #[serde(rename = "QueryParam", skip_serializing_if = "Vec::is_empty")]
    pub query_param: Vec<RouteQueryParamMatch>,
    #[serde(rename = "Methods", skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<String>,
}

/// `ServiceRouteHTTPMatchHeader`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RouteHeaderMatch {
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "Present", skip_serializing_if = "is_false")]
    pub present: bool,
    #[serde(rename = "Exact", skip_serializing_if = "String::is_empty")]
    pub exact: String,
    #[serde(rename = "Prefix", skip_serializing_if = "String::is_empty")]
    pub prefix: String,
    #[serde(rename = "Suffix", skip_serializing_if = "String::is_empty")]
    pub suffix: String,
    #[serde(rename = "Regex", skip_serializing_if = "String::is_empty")]
    pub regex: String,
    #[serde(rename = "Invert", skip_serializing_if = "is_false")]
    pub invert: bool,
}

/// `ServiceRouteHTTPMatchQueryParam`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RouteQueryParamMatch {
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "Present", skip_serializing_if = "is_false")]
    pub present: bool,
    #[serde(rename = "Exact", skip_serializing_if = "String::is_empty")]
    pub exact: String,
    #[serde(rename = "Regex", skip_serializing_if = "String::is_empty")]
    pub regex: String,
}

/// `ServiceRouteDestination`. Go's `MarshalJSON` writes the two timeouts as duration strings
/// before the other fields.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RouteDestination {
    /// Nanoseconds.
    #[serde(
        rename = "RequestTimeout",
        skip_serializing_if = "is_zero_i64",
        serialize_with = "ser_duration_string"
    )]
    pub request_timeout: i64,
    /// Nanoseconds.
    #[serde(
        rename = "IdleTimeout",
        skip_serializing_if = "is_zero_i64",
        serialize_with = "ser_duration_string"
    )]
    pub idle_timeout: i64,
    #[serde(rename = "Service", skip_serializing_if = "String::is_empty")]
    pub service: String,
    #[serde(rename = "ServiceSubset", skip_serializing_if = "String::is_empty")]
    pub service_subset: String,
    #[serde(rename = "Namespace", skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(rename = "Partition", skip_serializing_if = "String::is_empty")]
    pub partition: String,
    #[serde(rename = "PrefixRewrite", skip_serializing_if = "String::is_empty")]
    pub prefix_rewrite: String,
    #[serde(rename = "NumRetries", skip_serializing_if = "is_zero_u32")]
    pub num_retries: u32,
    #[serde(rename = "RetryOnConnectFailure", skip_serializing_if = "is_false")]
    pub retry_on_connect_failure: bool,
    #[serde(rename = "RetryOn", skip_serializing_if = "Vec::is_empty")]
    pub retry_on: Vec<String>,
    #[serde(rename = "RetryOnStatusCodes", skip_serializing_if = "Vec::is_empty")]
    pub retry_on_status_codes: Vec<u32>,
    #[serde(rename = "RequestHeaders", skip_serializing_if = "Option::is_none")]
    pub request_headers: Option<HttpHeaderModifiers>,
    #[serde(rename = "ResponseHeaders", skip_serializing_if = "Option::is_none")]
    pub response_headers: Option<HttpHeaderModifiers>,
}

static HEADER_MATCH: Schema = Schema {
    fields: &[
        Field("Name", Ty::Str),
        Field("Present", Ty::Bool),
        Field("Exact", Ty::Str),
        Field("Prefix", Ty::Str),
        Field("Suffix", Ty::Str),
        Field("Regex", Ty::Str),
        Field("Invert", Ty::Bool),
    ],
};
static HEADER_MATCH_TY: Ty = Ty::Struct(&HEADER_MATCH);
static QUERY_MATCH: Schema = Schema {
    fields: &[
        Field("Name", Ty::Str),
        Field("Present", Ty::Bool),
        Field("Exact", Ty::Str),
        Field("Regex", Ty::Str),
    ],
};
static QUERY_MATCH_TY: Ty = Ty::Struct(&QUERY_MATCH);
static HTTP_MATCH: Schema = Schema {
    fields: &[
        Field("PathExact", Ty::Str),
        Field("PathPrefix", Ty::Str),
        Field("PathRegex", Ty::Str),
        Field("CaseInsensitive", Ty::Bool),
        Field("Header", Ty::Slice(&HEADER_MATCH_TY)),
        Field("QueryParam", Ty::Slice(&QUERY_MATCH_TY)),
        Field("Methods", Ty::Slice(&Ty::Str)),
    ],
};
static MATCH: Schema = Schema {
    fields: &[Field("HTTP", Ty::Struct(&HTTP_MATCH))],
};
static DESTINATION: Schema = Schema {
    fields: &[
        Field("Service", Ty::Str),
        Field("ServiceSubset", Ty::Str),
        Field("Namespace", Ty::Str),
        Field("Partition", Ty::Str),
        Field("PrefixRewrite", Ty::Str),
        Field("RequestTimeout", Ty::Duration),
        Field("IdleTimeout", Ty::Duration),
        Field("NumRetries", Ty::Uint("uint32")),
        Field("RetryOnConnectFailure", Ty::Bool),
        Field("RetryOn", Ty::Slice(&Ty::Str)),
        Field("RetryOnStatusCodes", Ty::Slice(&UINT32)),
        Field("RequestHeaders", Ty::Struct(&HEADER_MODIFIERS)),
        Field("ResponseHeaders", Ty::Struct(&HEADER_MODIFIERS)),
    ],
};
static UINT32: Ty = Ty::Uint("uint32");
static ROUTE: Schema = Schema {
    fields: &[
        Field("Match", Ty::Struct(&MATCH)),
        Field("Destination", Ty::Struct(&DESTINATION)),
    ],
};
static ROUTE_TY: Ty = Ty::Struct(&ROUTE);
pub(crate) static ROUTER_SCHEMA: Schema = Schema {
    fields: &[
        Field("Kind", Ty::Str),
        Field("Name", Ty::Str),
        Field("Routes", Ty::Slice(&ROUTE_TY)),
        Field("Meta", Ty::Map(&Ty::Str)),
        Field("Hash", Ty::Uint("uint64")),
    ],
};

fn valid_retry_condition(r: &str) -> bool {
    matches!(
        r,
        "5xx"
            | "gateway-error"
            | "reset"
            | "connect-failure"
            | "envoy-ratelimited"
            | "retriable-4xx"
            | "refused-stream"
            | "cancelled"
            | "deadline-exceeded"
            | "internal"
            | "resource-exhausted"
            | "unavailable"
    )
}

impl ServiceRouter {
    pub(crate) fn normalize(&mut self) {
        self.kind = "service-router".into();
        for route in self.routes.iter_mut().flatten() {
            if let Some(http) = route.matches.as_mut().and_then(|m| m.http.as_mut()) {
                http.methods.iter_mut().for_each(|m| *m = m.to_uppercase());
            }
        }
    }

    /// `ServiceRouterConfigEntry.Validate`.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.name.is_empty() {
            return Err("Name is required".into());
        }
        let meta_errs = validate_meta(&self.meta);
        if !meta_errs.is_empty() {
            return Err(multierror(&meta_errs));
        }
        for (i, route) in self.routes.iter().flatten().enumerate() {
            let mut eligible_for_prefix_rewrite = false;
            if let Some(http) = route.matches.as_ref().and_then(|m| m.http.as_ref()) {
                eligible_for_prefix_rewrite =
                    !http.path_exact.is_empty() || !http.path_prefix.is_empty();
                validate_http_match(i, http)?;
            }
            if let Some(dest) = &route.destination {
                if !dest.prefix_rewrite.is_empty() && !eligible_for_prefix_rewrite {
                    return Err(format!(
                        "Route[{i}] cannot make use of PrefixRewrite without configuring either PathExact or PathPrefix"
                    ));
                }
                if let Some(r) = dest.retry_on.iter().find(|r| !valid_retry_condition(r)) {
                    return Err(format!(
                        "Route[{i}] contains an invalid retry condition: {}",
                        go_quote(r)
                    ));
                }
            }
        }
        Ok(())
    }
}

fn validate_http_match(i: usize, http: &RouteHttpMatch) -> Result<(), String> {
    validate_path_match(
        &format!("Route[{i}]"),
        ' ',
        &http.path_exact,
        &http.path_prefix,
        &http.path_regex,
    )?;
    for (j, h) in http.header.iter().enumerate() {
        if h.name.is_empty() {
            return Err(format!(
                "Route[{i}] Header[{j}] missing required Name field"
            ));
        }
        let parts = [
            h.present,
            !h.exact.is_empty(),
            !h.regex.is_empty(),
            !h.prefix.is_empty(),
            !h.suffix.is_empty(),
        ];
        if parts.iter().filter(|b| **b).count() != 1 {
            return Err(format!(
                "Route[{i}] Header[{j}] should only contain one of Present, Exact, Prefix, Suffix, or Regex"
            ));
        }
    }
    for (j, q) in http.query_param.iter().enumerate() {
        if q.name.is_empty() {
            return Err(format!(
                "Route[{i}] QueryParam[{j}] missing required Name field"
            ));
        }
        let parts = [q.present, !q.exact.is_empty(), !q.regex.is_empty()];
        if parts.iter().filter(|b| **b).count() != 1 {
            return Err(format!(
                "Route[{i}] QueryParam[{j}] should only contain one of Present, Exact, or Regex"
            ));
        }
    }
    let mut found: Vec<&str> = Vec::new();
    for m in &http.methods {
        if !is_valid_http_method(m) {
            return Err(format!(
                "Route[{i}] Methods contains an invalid method {}",
                go_quote(m)
            ));
        }
        if found.contains(&m.as_str()) {
            return Err(format!(
                "Route[{i}] Methods contains {} more than once",
                go_quote(m)
            ));
        }
        found.push(m);
    }
    Ok(())
}
