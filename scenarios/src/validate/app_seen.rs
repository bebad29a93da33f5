//! Validation of what an `http` check says the application received: `app_headers` and
//! `app_without` go with a 2xx `status`, name real header names, and use the `{jwt-payload}`
//! placeholders only with a `jwt` that has a payload.

use std::collections::BTreeMap;

use crate::error::{FieldError, FieldPath};
use crate::model::{JwtToken, TokenKind};

/// The placeholders an `app_headers` value may be.
pub(crate) const PLACEHOLDERS: [&str; 2] = ["{jwt-payload}", "{jwt-payload-padded}"];

pub(super) fn check_app_seen(
    at: &FieldPath,
    status: u16,
    jwt: Option<&JwtToken>,
    app_headers: &BTreeMap<String, String>,
    app_without: &[String],
) -> Result<(), FieldError> {
    if app_headers.is_empty() && app_without.is_empty() {
        return Ok(());
    }
    let field = if app_headers.is_empty() {
        "app_without"
    } else {
        "app_headers"
    };
    if !(200..300).contains(&status) {
        return Err(FieldError::new(
            at.key(field),
            format!(
                "`{field}` goes with a 2xx `status`: only then does the application receive the request"
            ),
        ));
    }
    for (name, value) in app_headers {
        header_name(&at.key("app_headers"), name)?;
        if value.starts_with('{') && !PLACEHOLDERS.contains(&value.as_str()) {
            return Err(FieldError::new(
                at.key("app_headers").key(name),
                format!(
                    "{value:?} is no placeholder; use one of {} or a literal value",
                    PLACEHOLDERS.join(", ")
                ),
            ));
        }
        let has_payload =
            jwt.is_some_and(|t| !matches!(t.token, TokenKind::Missing | TokenKind::Malformed));
        if PLACEHOLDERS.contains(&value.as_str()) && !has_payload {
            return Err(FieldError::new(
                at.key("app_headers").key(name),
                format!(
                    "{value} needs the check's `jwt` to be a token with a payload (not `missing` or `malformed`)"
                ),
            ));
        }
    }
    for (i, name) in app_without.iter().enumerate() {
        header_name(&at.key("app_without").index(i), name)?;
        if app_headers.keys().any(|h| h.eq_ignore_ascii_case(name)) {
            return Err(FieldError::new(
                at.key("app_without").index(i),
                format!("{name:?} is also in `app_headers`"),
            ));
        }
    }
    Ok(())
}

/// An HTTP field name (RFC 9110 `token`), lowercase as HTTP/2 requires.
fn header_name(at: &FieldPath, name: &str) -> Result<(), FieldError> {
    let token =
        |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(FieldError::new(
            at.clone(),
            format!("{name:?} is not a lowercase HTTP header name"),
        ));
    }
    Ok(())
}
