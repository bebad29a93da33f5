//! The `service-splitter` config entry: weighted splits (normalized to 0.01% and summing to
//! 100), written with Go's `float32` formatting.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::common::{HEADER_MODIFIERS, HttpHeaderModifiers, validate_meta};
use super::{go_quote, multierror};
use crate::go::mapstructure::{Field, Schema, Ty};

/// A `service-splitter` entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServiceSplitter {
    #[serde(rename = "Kind")]
    pub kind: String,
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "Splits")]
    pub splits: Vec<ServiceSplit>,
    #[serde(rename = "Meta", skip_serializing_if = "BTreeMap::is_empty")]
    pub meta: BTreeMap<String, String>,
    #[serde(rename = "Hash", skip_serializing)]
    pub hash: u64,
    #[serde(rename = "CreateIndex", skip_deserializing)]
    pub create_index: u64,
    #[serde(rename = "ModifyIndex", skip_deserializing)]
    pub modify_index: u64,
}

/// One split (`Weight` is a Go `float32`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServiceSplit {
    #[serde(rename = "Weight", serialize_with = "ser_go_float32")]
    pub weight: f32,
    #[serde(rename = "Service", skip_serializing_if = "String::is_empty")]
    pub service: String,
    #[serde(rename = "ServiceSubset", skip_serializing_if = "String::is_empty")]
    pub service_subset: String,
    #[serde(rename = "Namespace", skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(rename = "Partition", skip_serializing_if = "String::is_empty")]
    pub partition: String,
    #[serde(rename = "RequestHeaders", skip_serializing_if = "Option::is_none")]
    pub request_headers: Option<HttpHeaderModifiers>,
    #[serde(rename = "ResponseHeaders", skip_serializing_if = "Option::is_none")]
    pub response_headers: Option<HttpHeaderModifiers>,
}

static SPLIT: Schema = Schema {
    fields: &[
        Field("Weight", Ty::Float),
        Field("Service", Ty::Str),
        Field("ServiceSubset", Ty::Str),
        Field("Namespace", Ty::Str),
        Field("Partition", Ty::Str),
        Field("RequestHeaders", Ty::Struct(&HEADER_MODIFIERS)),
        Field("ResponseHeaders", Ty::Struct(&HEADER_MODIFIERS)),
    ],
};
static SPLIT_TY: Ty = Ty::Struct(&SPLIT);
pub(crate) static SPLITTER_SCHEMA: Schema = Schema {
    fields: &[
        Field("Kind", Ty::Str),
        Field("Name", Ty::Str),
        Field("Splits", Ty::Slice(&SPLIT_TY)),
        Field("Meta", Ty::Map(&Ty::Str)),
        Field("Hash", Ty::Uint("uint64")),
    ],
};

/// Go writes a `float32` with its shortest representation and no trailing `.0` (`90`, `33.33`).
fn ser_go_float32<S: serde::Serializer>(w: &f32, s: S) -> Result<S::Ok, S::Error> {
    match w.to_string().parse::<serde_json::Number>() {
        Ok(n) => n.serialize(s),
        Err(_) => s.serialize_f32(*w),
    }
}

/// Weight in units of 0.01% (`scaleWeight`).
pub(crate) fn scale_weight(w: f32) -> i64 {
    (f64::from(w * 100.0)).round() as i64
}

impl ServiceSplitter {
    pub(crate) fn normalize(&mut self) {
        self.kind = "service-splitter".into();
        for s in &mut self.splits {
            s.weight = scale_weight(s.weight) as f32 / 100.0;
        }
    }

    /// `ServiceSplitterConfigEntry.Validate`.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.name.is_empty() {
            return Err("Name is required".into());
        }
        if self.splits.is_empty() {
            return Err("no splits configured".into());
        }
        let meta_errs = validate_meta(&self.meta);
        if !meta_errs.is_empty() {
            return Err(multierror(&meta_errs));
        }
        let mut seen: Vec<ServiceSplit> = Vec::new();
        for split in &self.splits {
            let mut key = ServiceSplit {
                weight: 0.0,
                ..split.clone()
            };
            if key.service.is_empty() {
                key.service = self.name.clone();
            }
            if seen.contains(&key) {
                return Err(format!(
                    "split destination occurs more than once: service={}, subset={}, namespace={}, partition={}",
                    go_quote(&key.service),
                    go_quote(&key.service_subset),
                    go_quote(&key.namespace),
                    go_quote(&key.partition)
                ));
            }
            seen.push(key);
        }
        let sum: i64 = self.splits.iter().map(|s| scale_weight(s.weight)).sum();
        if sum != 100 * 100 {
            return Err(format!(
                "the sum of all split weights must be 100, not {:.6}",
                sum as f32 / 100.0
            ));
        }
        Ok(())
    }
}
