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
    let (f, m) = bad(&with_jwt(&format!(
        "{{ kind = \"http\", {WEB}, path = \"/\", status = 403, app_without = [\"x\"] }}"
    )));
    assert_eq!(f, "steps[0].check.app_without", "{m}");
    let (f, _) = bad(&with_jwt(&format!(
        "{{ kind = \"http\", {WEB}, path = \"/\", status = 200, app_headers = {{ X-Up = \"v\" }} }}"
    )));
    assert_eq!(f, "steps[0].check.app_headers");
    let (f, m) = bad(&with_jwt(&format!(
        "{{ kind = \"http\", {WEB}, path = \"/\", status = 200, app_headers = {{ x = \"{{jwt-payload}}\" }} }}"
    )));
    assert_eq!(f, "steps[0].check.app_headers.x", "{m}");
    let (f, _) = bad(&with_jwt(&format!(
        "{{ kind = \"http\", {WEB}, path = \"/\", jwt = {{ provider = \"okta\", token = \"missing\" }}, status = 200, app_headers = {{ x = \"{{jwt-payload}}\" }} }}"
    )));
    assert_eq!(f, "steps[0].check.app_headers.x");
    let (f, m) = bad(&with_jwt(&format!(
        "{{ kind = \"http\", {WEB}, path = \"/\", {valid}, status = 200, app_headers = {{ x = \"{{jwt}}\" }} }}"
    )));
    assert_eq!(f, "steps[0].check.app_headers.x");
    assert!(m.contains("{jwt-payload}"), "{m}");
    let (f, _) = bad(&with_jwt(&format!(
        "{{ kind = \"http\", {WEB}, path = \"/\", status = 200, app_headers = {{ x = \"1\" }}, app_without = [\"x\"] }}"
    )));
    assert_eq!(f, "steps[0].check.app_without[0]");
}
