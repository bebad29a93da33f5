//! The local app's `app` step, `token_rules` and `ready_optional`.

use super::{bad, expect_step, good};

#[test]
fn app_steps_take_a_delay_for_http_or_a_blackhole() {
    let step = |answer: &str| format!("\n[[steps]]\ndo = \"app\"\nanswer = {answer}\n");
    good(&format!(
        "[setup]\nprotocol = \"http\"\n{}",
        step("{ delay = \"2s\" }")
    ));
    good(&step("{ blackhole = true }"));
    good(&step("{}"));
    let (f, m) = bad(&step("{ delay = \"2s\" }"));
    assert_eq!(f, "steps[0].answer.delay");
    assert!(m.contains("HTTP app"), "{m}");
    let (f, _) = bad(&format!(
        "[setup]\nprotocol = \"http\"\n{}",
        step("{ delay = \"soon\" }")
    ));
    assert_eq!(f, "steps[0].answer.delay");
    let (f, m) = bad(&step("{ status = 503 }"));
    assert_eq!(f, "steps[0].answer");
    assert!(m.contains("only `delay` and `blackhole`"), "{m}");
    let (f, _) = bad(&format!(
        "[setup]\napp_socket = true\n{}",
        step("{ blackhole = true }")
    ));
    assert_eq!(f, "steps[0].answer.blackhole");
}

#[test]
fn token_rules_must_say_something_and_ready_may_be_optional() {
    let (f, _) = bad("[setup]\ntoken_rules = \"  \"\n");
    assert_eq!(f, "setup.token_rules");
    good(&format!(
        "[setup]\nready_optional = true\ntoken_rules = 'service \"db\" {{ policy = \"write\" }}'\n{}",
        expect_step("{ kind = \"authorize-serial\" }")
    ));
}
