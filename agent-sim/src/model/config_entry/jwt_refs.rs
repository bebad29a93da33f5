//! `validateJWTProvidersExist` (state store, `config_entry.go`): a `service-intentions` entry
//! may name only `jwt-provider` entries that exist, at its top level or in any permission.
//! Deleting a provider that intentions still name is allowed, as in Consul (the state store
//! checks nothing for `jwt-provider` deletions).

use std::collections::BTreeSet;

use super::{ConfigEntries, ConfigEntry, Kind};

/// Consul's error for a write naming missing providers: one `Referenced JWT Provider does not
/// exist. Provider Name: <name>` per missing name, as `go-multierror` formats a list (Consul
/// ranges over a map, so its order varies; here the names are sorted).
pub(super) fn check_providers_exist(
    table: &ConfigEntries,
    entry: &ConfigEntry,
) -> Result<(), String> {
    let ConfigEntry::ServiceIntentions(si) = entry else {
        return Ok(());
    };
    let referenced: BTreeSet<&str> = si
        .jwt
        .iter()
        .chain(
            si.sources
                .iter()
                .flat_map(|s| s.permissions.iter())
                .filter_map(|p| p.jwt.as_ref()),
        )
        .flat_map(|j| j.providers.iter())
        .map(|p| p.name.as_str())
        .collect();
    let missing: Vec<String> = referenced
        .into_iter()
        .filter(|name| table.get(Kind::JwtProvider, name).is_none())
        .map(|name| format!("Referenced JWT Provider does not exist. Provider Name: {name}"))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(multierror(&missing))
}

/// `multierror.ListFormatFunc`.
fn multierror(errors: &[String]) -> String {
    let head = if errors.len() == 1 {
        "1 error occurred:".to_owned()
    } else {
        format!("{} errors occurred:", errors.len())
    };
    let points: String = errors.iter().map(|e| format!("\n\t* {e}")).collect();
    format!("{head}{points}\n\n")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::config_entry::decode_entry;

    fn entry(v: &serde_json::Value) -> ConfigEntry {
        decode_entry(&serde_json::to_vec(v).unwrap()).unwrap()
    }

    fn intentions(top: &[&str], perm: &[&str]) -> ConfigEntry {
        let names = |n: &[&str]| json!({"Providers": n.iter().map(|p| json!({"Name": p})).collect::<Vec<_>>()});
        entry(&json!({"Kind": "service-intentions", "Name": "db",
            "JWT": names(top),
            "Sources": [{"Name": "web", "Permissions": [
                {"Action": "allow", "HTTP": {"PathPrefix": "/a"}, "JWT": names(perm)}]}]}))
    }

    #[test]
    fn intentions_name_only_stored_providers() {
        let mut table = ConfigEntries::new();
        let http = entry(&json!({"Kind": "proxy-defaults", "Name": "global",
            "Config": {"protocol": "http"}}));
        table.upsert(http, None, 1).unwrap();
        let e = intentions(&["okta"], &["auth0", "okta"]);
        let err = table.upsert(e.clone(), None, 1).unwrap_err().to_string();
        assert!(
            err.contains(
                "2 errors occurred:\n\t* Referenced JWT Provider does not exist. Provider Name: auth0\n\t* Referenced JWT Provider does not exist. Provider Name: okta\n\n"
            ),
            "{err}"
        );
        for name in ["okta", "auth0"] {
            let p = entry(&json!({"Kind": "jwt-provider", "Name": name, "Issuer": "i",
                "JSONWebKeySet": {"Local": {"JWKS": "e30="}}}));
            table.upsert(p, None, 2).unwrap();
        }
        assert!(table.upsert(e, None, 3).unwrap());
        // Consul lets a named provider go.
        assert!(table.delete(Kind::JwtProvider, "okta", None, 4).is_ok());
        let one = intentions(&["okta"], &[]);
        let err = table.upsert(one, None, 5).unwrap_err().to_string();
        assert!(err.contains("1 error occurred:\n\t* Referenced JWT Provider does not exist. Provider Name: okta\n\n"), "{err}");
    }
}
