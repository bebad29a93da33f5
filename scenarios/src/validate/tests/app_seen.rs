//! `app_headers` and `app_without` on `http` checks: 2xx only, real header names, and the
//! payload placeholders only with a token that has a payload.

use super::{bad, good};

fn with_jwt(check: &str) -> String {
    format!(
        "[setup]\nprotocol = \"http\"\n[[setup.jwt_providers]]\nname = \"okta\"\n\
         [[steps]]\ndo = \"expect\"\nname = \"n\"\ncheck = {check}\n"
    )
}

const WEB: &str = "identity = { kind = \"service\", service = \"web\" }";

#[test]
fn app_headers_need_a_2xx_names_and_a_payload() {
    let valid = "jwt = { provider = \"okta\", token = \"valid\" }";
    good(&with_jwt(&format!(
        "{{ kind = \"http\", {WEB}, path = \"/\", {valid}, status = 200, app_headers = {{ x-jwt = \"{{jwt-payload}}\", x-b = \"literal\" }}, app_without = [\"x-forged\"] }}"
    )));
    good(&with_jwt(&format!(
        "{{ kind = \"http\", {WEB}, path = \"/\", {valid}, status = 200, app_headers = {{ x-jwt = \"{{jwt-payload-padded}}\" }} }}"
    )));
    // Each check's fields, and the field its error names.
    let refused = [
        (
            r#"path = "/", status = 403, app_without = ["x"]"#,
            "steps[0].check.app_without",
        ),
        (
            r#"path = "/", status = 200, app_headers = { X-Up = "v" }"#,
            "steps[0].check.app_headers",
        ),
        (
            r#"path = "/", status = 200, app_headers = { x = "{jwt-payload}" }"#,
            "steps[0].check.app_headers.x",
        ),
        (
            r#"path = "/", jwt = { provider = "okta", token = "missing" }, status = 200, app_headers = { x = "{jwt-payload}" }"#,
            "steps[0].check.app_headers.x",
        ),
        (
            r#"path = "/", jwt = { provider = "okta", token = "valid" }, status = 200, app_headers = { x = "{jwt}" }"#,
            "steps[0].check.app_headers.x",
        ),
        (
            r#"path = "/", status = 200, app_headers = { x = "1" }, app_without = ["x"]"#,
            "steps[0].check.app_without[0]",
        ),
    ];
    for (fields, field) in refused {
        let (f, m) = bad(&with_jwt(&format!(
            "{{ kind = \"http\", {WEB}, {fields} }}"
        )));
        assert_eq!(f, field, "{fields}: {m}");
        if fields.contains("{jwt}") {
            assert!(m.contains("{jwt-payload}"), "{m}");
        }
    }
}
