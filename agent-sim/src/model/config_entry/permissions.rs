//! L7 permissions of intention sources (HTTP path, header and method matchers, JWT
//! requirements) and their validation texts.

use serde::{Deserialize, Serialize};

use super::common::is_false;
use super::path_match::validate_path_match;
use super::{go_quote, multierror};
use crate::go::mapstructure::{Field, Schema, Ty};

/// An L7 permission (`Sources[].Permissions[]`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IntentionPermission {
    #[serde(rename = "Action")]
    pub action: String,
    #[serde(rename = "HTTP", skip_serializing_if = "Option::is_none")]
    pub http: Option<IntentionHttpPermission>,
    #[serde(rename = "JWT", skip_serializing_if = "Option::is_none")]
    pub jwt: Option<IntentionJwtRequirement>,
}

/// HTTP match criteria of a permission.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IntentionHttpPermission {
    #[serde(rename = "PathExact", skip_serializing_if = "String::is_empty")]
    pub path_exact: String,
    #[serde(rename = "PathPrefix", skip_serializing_if = "String::is_empty")]
    pub path_prefix: String,
    #[serde(rename = "PathRegex", skip_serializing_if = "String::is_empty")]
    pub path_regex: String,
    #[serde(rename = "Header", skip_serializing_if = "Vec::is_empty")]
    pub header: Vec<IntentionHttpHeaderPermission>,
    #[serde(rename = "Methods", skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<String>,
}

/// A header matcher of an HTTP permission.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IntentionHttpHeaderPermission {
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
    #[serde(rename = "Contains", skip_serializing_if = "String::is_empty")]
    pub contains: String,
    #[serde(rename = "Regex", skip_serializing_if = "String::is_empty")]
    pub regex: String,
    #[serde(rename = "Invert", skip_serializing_if = "is_false")]
    pub invert: bool,
    #[serde(rename = "IgnoreCase", skip_serializing_if = "is_false")]
    pub ignore_case: bool,
}

/// `IntentionJWTRequirement`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IntentionJwtRequirement {
    #[serde(rename = "Providers", skip_serializing_if = "Vec::is_empty")]
    pub providers: Vec<IntentionJwtProvider>,
}

/// `IntentionJWTProvider`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IntentionJwtProvider {
    #[serde(rename = "Name", skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(rename = "VerifyClaims", skip_serializing_if = "Vec::is_empty")]
    pub verify_claims: Vec<IntentionJwtClaimVerification>,
}

/// `IntentionJWTClaimVerification`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IntentionJwtClaimVerification {
    #[serde(rename = "Path", skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<String>,
    #[serde(rename = "Value", skip_serializing_if = "String::is_empty")]
    pub value: String,
}

static CLAIM: Schema = Schema {
    fields: &[Field("Path", Ty::Slice(&Ty::Str)), Field("Value", Ty::Str)],
};
static CLAIM_TY: Ty = Ty::Struct(&CLAIM);
static PROVIDER: Schema = Schema {
    fields: &[
        Field("Name", Ty::Str),
        Field("VerifyClaims", Ty::Slice(&CLAIM_TY)),
    ],
};
static PROVIDER_TY: Ty = Ty::Struct(&PROVIDER);
pub(crate) static JWT: Schema = Schema {
    fields: &[Field("Providers", Ty::Slice(&PROVIDER_TY))],
};
static HEADER: Schema = Schema {
    fields: &[
        Field("Name", Ty::Str),
        Field("Present", Ty::Bool),
        Field("Exact", Ty::Str),
        Field("Prefix", Ty::Str),
        Field("Suffix", Ty::Str),
        Field("Contains", Ty::Str),
        Field("Regex", Ty::Str),
        Field("Invert", Ty::Bool),
        Field("IgnoreCase", Ty::Bool),
    ],
};
static HEADER_TY: Ty = Ty::Struct(&HEADER);
static HTTP: Schema = Schema {
    fields: &[
        Field("PathExact", Ty::Str),
        Field("PathPrefix", Ty::Str),
        Field("PathRegex", Ty::Str),
        Field("Header", Ty::Slice(&HEADER_TY)),
        Field("Methods", Ty::Slice(&Ty::Str)),
    ],
};
static PERMISSION: Schema = Schema {
    fields: &[
        Field("Action", Ty::Str),
        Field("HTTP", Ty::Struct(&HTTP)),
        Field("JWT", Ty::Struct(&JWT)),
    ],
};
pub(crate) static PERMISSION_TY: Ty = Ty::Struct(&PERMISSION);
pub(crate) fn validate_jwt(jwt: &IntentionJwtRequirement) -> Result<(), String> {
    let errs: Vec<String> = jwt
        .providers
        .iter()
        .filter(|p| p.name.is_empty())
        .map(|_| "JWT provider name is required".to_owned())
        .collect();
    if errs.is_empty() {
        Ok(())
    } else {
        Err(multierror(&errs))
    }
}

/// Go's `http.Method*` constants.
pub(crate) fn is_valid_http_method(m: &str) -> bool {
    matches!(
        m,
        "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE" | "CONNECT" | "OPTIONS" | "TRACE"
    )
}

pub(crate) fn validate_permission(
    i: usize,
    j: usize,
    perm: &IntentionPermission,
) -> Result<(), String> {
    if !matches!(perm.action.as_str(), "allow" | "deny") {
        return Err(format!(
            "Sources[{i}].Permissions[{j}].Action must be set to 'allow' or 'deny'"
        ));
    }
    let prefix = format!("Sources[{i}].Permissions[{j}].HTTP");
    let Some(http) = &perm.http else {
        return Err(format!("{prefix} is required"));
    };
    let path_parts = validate_path_match(
        &prefix,
        '.',
        &http.path_exact,
        &http.path_prefix,
        &http.path_regex,
    )?;
    let mut perm_parts = path_parts;
    for (k, hdr) in http.header.iter().enumerate() {
        if hdr.name.is_empty() {
            return Err(format!("{prefix}.Header[{k}] missing required Name field"));
        }
        let parts = [
            hdr.present,
            !hdr.exact.is_empty(),
            !hdr.regex.is_empty(),
            !hdr.prefix.is_empty(),
        ]
        .into_iter()
        .chain([!hdr.suffix.is_empty(), !hdr.contains.is_empty()])
        .filter(|b| *b)
        .count();
        if parts != 1 {
            return Err(format!(
                "{prefix}.Header[{k}] should only contain one of Present, Exact, Prefix, Suffix, Contains, or Regex"
            ));
        }
        if hdr.ignore_case && (hdr.present || !hdr.regex.is_empty()) {
            return Err(format!(
                "{prefix}.Header[{k}] should set one of Exact, Prefix, Suffix, or Contains to use IgnoreCase"
            ));
        }
        perm_parts += 1;
    }
    if !http.methods.is_empty() {
        let mut found: Vec<&str> = Vec::new();
        for m in &http.methods {
            if !is_valid_http_method(m) {
                return Err(format!(
                    "{prefix}.Methods contains an invalid method {}",
                    go_quote(m)
                ));
            }
            if found.contains(&m.as_str()) {
                return Err(format!(
                    "{prefix}.Methods contains {} more than once",
                    go_quote(m)
                ));
            }
            found.push(m);
        }
        perm_parts += 1;
    }
    if perm_parts == 0 {
        return Err(format!("{prefix} should not be empty"));
    }
    if let Some(jwt) = &perm.jwt {
        validate_jwt(jwt)?;
    }
    Ok(())
}
