//! Config-entry fragments the compiled chain carries verbatim (route and split definitions, load
//! balancer, subsets, failover policy, Envoy extensions): read leniently from the canonical JSON
//! read shape and written back in Go's field order with Go's `omitempty` rules.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::gofmt::{
    GoValue, de_duration, is_false, is_zero_i64, is_zero_u32, is_zero_u64, ser_duration_str,
    ser_f32,
};

/// One route of a `service-router` (`ServiceRoute`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct ServiceRoute {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub r#match: Option<RouteMatch>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination: Option<RouteDestination>,
}

/// `ServiceRouteMatch`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RouteMatch {
    #[serde(rename = "HTTP", skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpMatch>,
}

/// `ServiceRouteHTTPMatch`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct HttpMatch {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub path_exact: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub path_prefix: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub path_regex: String,
    #[serde(skip_serializing_if = "is_false")]
    pub case_insensitive: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub header: Vec<HeaderMatch>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub query_param: Vec<QueryParamMatch>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<String>,
}

/// `ServiceRouteHTTPMatchHeader`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct HeaderMatch {
    pub name: String,
    #[serde(skip_serializing_if = "is_false")]
    pub present: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub exact: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub prefix: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub suffix: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub regex: String,
    #[serde(skip_serializing_if = "is_false")]
    pub invert: bool,
}

/// `ServiceRouteHTTPMatchQueryParam`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct QueryParamMatch {
    pub name: String,
    #[serde(skip_serializing_if = "is_false")]
    pub present: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub exact: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub regex: String,
}

/// `ServiceRouteDestination`. Go's marshaller writes the two timeouts first, as strings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct RouteDestination {
    #[serde(
        deserialize_with = "de_duration",
        serialize_with = "ser_duration_str",
        skip_serializing_if = "is_zero_i64"
    )]
    pub request_timeout: i64,
    #[serde(
        deserialize_with = "de_duration",
        serialize_with = "ser_duration_str",
        skip_serializing_if = "is_zero_i64"
    )]
    pub idle_timeout: i64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub service: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub service_subset: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub partition: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub prefix_rewrite: String,
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub num_retries: u32,
    #[serde(skip_serializing_if = "is_false")]
    pub retry_on_connect_failure: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub retry_on: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub retry_on_status_codes: Vec<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_headers: Option<HeaderModifiers>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_headers: Option<HeaderModifiers>,
}

/// `HTTPHeaderModifiers`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct HeaderModifiers {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub add: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub set: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remove: Vec<String>,
}

impl HeaderModifiers {
    fn is_zero(m: Option<&Self>) -> bool {
        m.is_none_or(|m| m.add.is_empty() && m.set.is_empty() && m.remove.is_empty())
    }

    /// Consul's `MergeHTTPHeaderModifiers`: `overrides` wins on collisions; removes are
    /// de-duplicated. A zero `base` yields `overrides` unchanged (even an empty non-nil one).
    pub(crate) fn merge(base: Option<&Self>, overrides: Option<&Self>) -> Option<Self> {
        if Self::is_zero(base) {
            return overrides.cloned();
        }
        let mut merged = base.cloned().unwrap_or_default();
        let Some(over) = overrides else {
            return Some(merged);
        };
        for (k, v) in &over.add {
            merged.add.insert(k.clone(), v.clone());
        }
        for (k, v) in &over.set {
            merged.set.insert(k.clone(), v.clone());
        }
        for k in &over.remove {
            if !merged.remove.contains(k) {
                merged.remove.push(k.clone());
            }
        }
        Some(merged)
    }
}

/// One leg of a `service-splitter` (`ServiceSplit`). `Weight` is always written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct ServiceSplit {
    #[serde(serialize_with = "ser_f32")]
    pub weight: f32,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub service: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub service_subset: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub partition: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_headers: Option<HeaderModifiers>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_headers: Option<HeaderModifiers>,
}

impl ServiceSplit {
    /// Consul's `MergeParent`, used when flattening a split that points at another splitter:
    /// request headers apply parent first then child; response headers child first then parent.
    pub(crate) fn merge_parent(&self, parent: &Self) -> Self {
        let mut merged = self.clone();
        merged.request_headers = HeaderModifiers::merge(
            parent.request_headers.as_ref(),
            self.request_headers.as_ref(),
        );
        merged.response_headers = HeaderModifiers::merge(
            self.response_headers.as_ref(),
            parent.response_headers.as_ref(),
        );
        merged
    }
}

/// `LoadBalancer`, copied from the resolver onto resolver (and splitter) nodes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct LoadBalancer {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub policy: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ring_hash_config: Option<RingHashConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub least_request_config: Option<LeastRequestConfig>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hash_policies: Vec<HashPolicy>,
}

impl LoadBalancer {
    pub(crate) fn is_hash_based(&self) -> bool {
        matches!(self.policy.as_str(), "maglev" | "ring_hash")
    }
}

/// `RingHashConfig`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct RingHashConfig {
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub minimum_ring_size: u64,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub maximum_ring_size: u64,
}

/// `LeastRequestConfig`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct LeastRequestConfig {
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub choice_count: u32,
}

/// `HashPolicy`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct HashPolicy {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub field: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub field_value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cookie_config: Option<CookieConfig>,
    #[serde(rename = "SourceIP", skip_serializing_if = "is_false")]
    pub source_ip: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub terminal: bool,
}

/// `CookieConfig`. `TTL` has no custom marshaller in Go, so it is integer nanoseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct CookieConfig {
    #[serde(skip_serializing_if = "is_false")]
    pub session: bool,
    #[serde(
        rename = "TTL",
        deserialize_with = "de_duration",
        skip_serializing_if = "is_zero_i64"
    )]
    pub ttl: i64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub path: String,
}

/// `ServiceResolverSubset`; a target always carries one (`{}` when unset).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct Subset {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub filter: String,
    #[serde(skip_serializing_if = "is_false")]
    pub only_passing: bool,
}

/// `ServiceResolverFailoverPolicy`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct FailoverPolicy {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub mode: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub regions: Vec<String>,
}

/// `EnvoyExtension` (no `omitempty` anywhere; `Arguments` is `null` when unset).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct EnvoyExtension {
    pub name: String,
    pub required: bool,
    pub arguments: GoValue,
    pub consul_version: String,
    pub envoy_version: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(pairs: &[(&str, &str)]) -> Option<HeaderModifiers> {
        let set = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Some(HeaderModifiers {
            set,
            ..HeaderModifiers::default()
        })
    }

    #[test]
    fn merge_parent_matches_consul_all_bells_and_whistles() {
        // Expectations transcribed from Consul's compile_test.go "all the bells and whistles".
        let parent = ServiceSplit {
            weight: 25.0,
            request_headers: set(&[("parent", "1"), ("shared", "from-parent")]),
            response_headers: set(&[("parent", "2"), ("shared", "from-parent")]),
            ..ServiceSplit::default()
        };
        let plain_child = ServiceSplit {
            weight: 80.0,
            ..ServiceSplit::default()
        };
        let merged = plain_child.merge_parent(&parent);
        assert_eq!(merged.request_headers, parent.request_headers);
        assert_eq!(merged.response_headers, parent.response_headers);

        let child = ServiceSplit {
            weight: 20.0,
            request_headers: set(&[("child", "3"), ("shared", "from-child")]),
            response_headers: set(&[("child", "4"), ("shared", "from-parent")]),
            ..ServiceSplit::default()
        };
        let merged = child.merge_parent(&parent);
        assert_eq!(merged.weight, 20.0);
        let want_req = set(&[("parent", "1"), ("child", "3"), ("shared", "from-child")]);
        let want_resp = set(&[("parent", "2"), ("child", "4"), ("shared", "from-parent")]);
        assert_eq!(merged.request_headers, want_req);
        assert_eq!(merged.response_headers, want_resp);
    }

    #[test]
    fn destination_writes_timeouts_first_as_strings() {
        let dest: RouteDestination = serde_json::from_value(serde_json::json!({
            "Service": "api", "RequestTimeout": "15s", "NumRetries": 3, "Unknown": 1
        }))
        .unwrap();
        let text = serde_json::to_string(&dest).unwrap();
        assert_eq!(
            text,
            r#"{"RequestTimeout":"15s","Service":"api","NumRetries":3}"#
        );
    }
}
