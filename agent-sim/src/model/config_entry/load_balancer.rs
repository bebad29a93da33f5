//! The `LoadBalancer` block of `service-resolver` (policy, ring hash, least request, hash
//! policies) and its validation texts.

use serde::{Deserialize, Serialize};

use super::common::{is_false, is_zero_i64, is_zero_u32, is_zero_u64};
use super::go_quote;
use crate::go::mapstructure::{Field, Schema, Ty};

/// `LoadBalancer`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LoadBalancer {
    #[serde(rename = "Policy", skip_serializing_if = "String::is_empty")]
    pub policy: String,
    #[serde(rename = "RingHashConfig", skip_serializing_if = "Option::is_none")]
    pub ring_hash_config: Option<RingHashConfig>,
    #[serde(rename = "LeastRequestConfig", skip_serializing_if = "Option::is_none")]
    pub least_request_config: Option<LeastRequestConfig>,
    #[serde(rename = "HashPolicies", skip_serializing_if = "Vec::is_empty")]
    pub hash_policies: Vec<HashPolicy>,
}

/// `RingHashConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RingHashConfig {
    #[serde(rename = "MinimumRingSize", skip_serializing_if = "is_zero_u64")]
    pub minimum_ring_size: u64,
    #[serde(rename = "MaximumRingSize", skip_serializing_if = "is_zero_u64")]
    pub maximum_ring_size: u64,
}

/// `LeastRequestConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LeastRequestConfig {
    #[serde(rename = "ChoiceCount", skip_serializing_if = "is_zero_u32")]
    pub choice_count: u32,
}

/// `HashPolicy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HashPolicy {
    #[serde(rename = "Field", skip_serializing_if = "String::is_empty")]
    pub field: String,
    #[serde(rename = "FieldValue", skip_serializing_if = "String::is_empty")]
    pub field_value: String,
    #[serde(rename = "CookieConfig", skip_serializing_if = "Option::is_none")]
    pub cookie_config: Option<CookieConfig>,
    #[serde(rename = "SourceIP", skip_serializing_if = "is_false")]
    pub source_ip: bool,
    #[serde(rename = "Terminal", skip_serializing_if = "is_false")]
    pub terminal: bool,
}

/// `CookieConfig` (TTL is integer nanoseconds on the wire).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CookieConfig {
    #[serde(rename = "Session", skip_serializing_if = "is_false")]
    pub session: bool,
    #[serde(rename = "TTL", skip_serializing_if = "is_zero_i64")]
    pub ttl: i64,
    #[serde(rename = "Path", skip_serializing_if = "String::is_empty")]
    pub path: String,
}

static COOKIE: Schema = Schema {
    fields: &[
        Field("Session", Ty::Bool),
        Field("TTL", Ty::Duration),
        Field("Path", Ty::Str),
    ],
};
static HASH_POLICY: Schema = Schema {
    fields: &[
        Field("Field", Ty::Str),
        Field("FieldValue", Ty::Str),
        Field("CookieConfig", Ty::Struct(&COOKIE)),
        Field("SourceIP", Ty::Bool),
        Field("Terminal", Ty::Bool),
    ],
};
static HASH_POLICY_TY: Ty = Ty::Struct(&HASH_POLICY);
static RING_HASH: Schema = Schema {
    fields: &[
        Field("MinimumRingSize", Ty::Uint("uint64")),
        Field("MaximumRingSize", Ty::Uint("uint64")),
    ],
};
static LEAST_REQUEST: Schema = Schema {
    fields: &[Field("ChoiceCount", Ty::Uint("uint32"))],
};
pub(crate) static LOAD_BALANCER: Schema = Schema {
    fields: &[
        Field("Policy", Ty::Str),
        Field("RingHashConfig", Ty::Struct(&RING_HASH)),
        Field("LeastRequestConfig", Ty::Struct(&LEAST_REQUEST)),
        Field("HashPolicies", Ty::Slice(&HASH_POLICY_TY)),
    ],
};

pub(crate) fn validate_load_balancer(lb: &LoadBalancer) -> Result<(), String> {
    let policy = lb.policy.as_str();
    if !matches!(
        policy,
        "" | "random" | "round_robin" | "least_request" | "ring_hash" | "maglev"
    ) {
        return Err(format!(
            "Bad LoadBalancer policy: {} is not supported",
            go_quote(policy)
        ));
    }
    if policy != "ring_hash" && lb.ring_hash_config.is_some() {
        return Err(format!(
            "Bad LoadBalancer configuration. RingHashConfig specified for incompatible load balancing policy {}",
            go_quote(policy)
        ));
    }
    if policy != "least_request" && lb.least_request_config.is_some() {
        return Err(format!(
            "Bad LoadBalancer configuration. LeastRequestConfig specified for incompatible load balancing policy {}",
            go_quote(policy)
        ));
    }
    let hash_based = matches!(policy, "ring_hash" | "maglev");
    if !hash_based && !lb.hash_policies.is_empty() {
        return Err(format!(
            "Bad LoadBalancer configuration: HashPolicies specified for non-hash-based Policy: {}",
            go_quote(policy)
        ));
    }
    for (i, hp) in lb.hash_policies.iter().enumerate() {
        let field = hp.field.as_str();
        let p = format!("Bad LoadBalancer HashPolicy[{i}]: ");
        if !field.is_empty() && !matches!(field, "header" | "cookie" | "query_parameter") {
            return Err(format!("{p}{} is not a supported field", go_quote(field)));
        }
        if hp.source_ip && !field.is_empty() {
            return Err(format!(
                "{p}A single hash policy cannot hash both a source address and a {}",
                go_quote(field)
            ));
        }
        if hp.source_ip && !hp.field_value.is_empty() {
            return Err(format!(
                "{p}A FieldValue cannot be specified when hashing SourceIP"
            ));
        }
        if !field.is_empty() && hp.field_value.is_empty() {
            return Err(format!(
                "{p}Field {} was specified without a FieldValue",
                go_quote(field)
            ));
        }
        if !hp.field_value.is_empty() && field.is_empty() {
            return Err(format!("{p}FieldValue requires a Field to apply to"));
        }
        if let Some(c) = &hp.cookie_config {
            if field != "cookie" {
                return Err(format!("{p}cookie_config provided for {}", go_quote(field)));
            }
            if c.session && c.ttl != 0 {
                return Err(format!("{p}a session cookie cannot have an associated TTL"));
            }
        }
    }
    Ok(())
}
