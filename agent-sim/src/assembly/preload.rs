//! Preload files: registrations, catalog entries, config entries and ACL tokens to load at start,
//! written as JSON or HCL. Every entry goes through the same validation as the HTTP API, and an
//! error names the file, the section, the entry's position and Consul's text.
//!
//! ```hcl
//! services       = [{ Name = "db", Port = 9090, Connect = { SidecarService = {} } }]
//! catalog        = [{ Node = "n2", Address = "127.0.0.2", Service = { Service = "cache", Port = 7000 } }]
//! config_entries = [{ Kind = "service-intentions", Name = "db", Sources = [{ Name = "web", Action = "allow" }] }]
//! tokens         = [{ SecretID = "sidecar-token", Rules = "service_prefix \"\" { policy = \"write\" }" }]
//! ```

use serde_json::Value;

use crate::go::decode::canonical_name;
use crate::state::control::Control;
use crate::state::error::SimError;

const SECTIONS: &[&str] = &["Services", "Catalog", "ConfigEntries", "Tokens"];

/// Parses `text` (JSON when it starts with `{`, else HCL) and applies it through `control`.
pub fn apply(control: &Control, path: &str, text: &str) -> Result<(), SimError> {
    let err = |message: String| SimError::Preload {
        path: path.to_owned(),
        message,
    };
    let value: Value = if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|e| err(format!("invalid JSON: {e}")))?
    } else {
        hcl::from_str(text).map_err(|e| err(format!("invalid HCL: {e}")))?
    };
    let Value::Object(top) = value else {
        return Err(err(
            "expected an object with services, catalog, config_entries and tokens".into(),
        ));
    };
    let mut sections: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for (key, val) in top {
        let Some(section) = canonical_name(&key, SECTIONS) else {
            return Err(err(format!(
                "unknown section {key:?}; expected one of services, catalog, config_entries, tokens"
            )));
        };
        let items = match val {
            Value::Array(items) => items,
            // HCL writes a single block as an object.
            one @ Value::Object(_) => vec![one],
            _ => return Err(err(format!("{key}: expected a list"))),
        };
        sections.push((section, items));
    }
    // Tokens first, config before registrations (central config is merged at read time anyway).
    sections.sort_by_key(|(s, _)| SECTIONS.iter().rev().position(|x| x == s));
    for (section, items) in sections {
        for (i, item) in items.iter().enumerate() {
            let at = |e: SimError| err(format!("{section}[{i}]: {}", reason(e)));
            match section {
                "Services" => control.register(item).map_err(at)?,
                "Catalog" => control.catalog_register(item).map_err(at)?,
                "ConfigEntries" => control.upsert_config_entry(item).map_err(at)?,
                _ => {
                    token(control, item).map_err(at)?;
                }
            }
        }
    }
    Ok(())
}

fn reason(e: SimError) -> String {
    match e {
        SimError::Rejected { message, .. } => message,
        other => other.to_string(),
    }
}

fn token(control: &Control, item: &Value) -> Result<(), SimError> {
    let field = |name: &'static str| -> Option<String> {
        let obj = item.as_object()?;
        obj.iter()
            .find(|(k, _)| canonical_name(k, &[name]).is_some())
            .and_then(|(_, v)| v.as_str().map(str::to_owned))
    };
    let rules = field("Rules").unwrap_or_default();
    let description = field("Description").unwrap_or_default();
    let secret = field("SecretID");
    control
        .create_token_with(secret, &rules, &description)
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assembly::sim::AgentSim;

    #[tokio::test]
    async fn loads_hcl_and_names_bad_entries() {
        let (_, c) = AgentSim::builder().build().unwrap();
        let good = r#"
            config_entries = [{ Kind = "service-defaults", Name = "db", Protocol = "http" }]
            services = [{ Name = "db", Port = 9090, Connect = { SidecarService = {} } }]
            tokens = [{ SecretID = "t1", Rules = "service_prefix \"\" { policy = \"write\" }" }]
        "#;
        apply(&c, "good.hcl", good).unwrap();
        assert_eq!(
            c.store
                .read(|st| st.services_on(&c.store.cfg.node_name).len()),
            2,
            "db and its sidecar"
        );

        let bad = r#"{"Services": [{"Name": "ok", "Port": 1}, {"Name": "x", "Bogus": 1}]}"#;
        let e = apply(&c, "bad.json", bad).unwrap_err().to_string();
        assert!(
            e.starts_with("bad.json: Services[1]: Request decode failed"),
            "{e}"
        );
        let e = apply(&c, "w.hcl", "widgets = []").unwrap_err().to_string();
        assert!(e.contains("unknown section \"widgets\""), "{e}");
        assert!(
            apply(&c, "x.json", "{")
                .unwrap_err()
                .to_string()
                .starts_with("x.json: invalid JSON")
        );
    }

    #[tokio::test]
    async fn the_readme_example_loads() {
        let (_, c) = AgentSim::builder()
            .acls("root", crate::model::acl::DefaultPolicy::Deny)
            .build()
            .unwrap();
        apply(
            &c,
            "examples/preload.hcl",
            include_str!("../../../examples/preload.hcl"),
        )
        .unwrap();
        let n = c.store.read(|st| {
            (
                st.services.len(),
                st.config.max_index() > 0,
                st.tokens.get("sidecar").is_some(),
            )
        });
        assert_eq!(
            n,
            (4, true, true),
            "db, its sidecar, cache-1, the server's consul service; config; token"
        );
    }
}
