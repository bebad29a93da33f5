//! The runner's failure paths, end to end against the reference proxy (or a process that is no
//! proxy at all): every kind of check can fail, with an observation that says why; readiness
//! failures, undeclared features and scenario bugs end as `fail`, `not-supported` and `error`;
//! scenarios start longest first and are reported in the planned order.

use std::path::PathBuf;
use std::time::Duration;

use conformance::{Manifest, RunConfig, catalogue, run_scenario, verdict_of};
use reports::{ScenarioResult, Verdict};

fn cfg() -> RunConfig {
    let mut c = RunConfig::new(
        Manifest::reference(),
        PathBuf::from(env!("CARGO_BIN_EXE_conformance")),
    );
    c.seed = 1;
    c.grace = Duration::from_secs(2);
    c
}

/// Runs a scenario parsed with the model's own serde derive, *without* the loader's validation,
/// so the runner's own guards against scenario bugs are exercised too.
async fn run(cfg: &RunConfig, toml: &str) -> (ScenarioResult, Verdict) {
    let text = format!("id = \"t\"\ndescription = \"d\"\nprofile = \"core\"\n{toml}");
    let s: scenarios::Scenario = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let r = run_scenario(cfg, &s).await;
    let v = verdict_of(&r);
    (r, v)
}

/// The observed text of the only non-passing check.
fn failed(r: &ScenarioResult) -> (&str, Verdict, &str) {
    let bad: Vec<_> = r
        .checks
        .iter()
        .filter(|c| c.verdict != Verdict::Pass)
        .collect();
    assert_eq!(bad.len(), 1, "{:#?}", r.checks);
    (&bad[0].name, bad[0].verdict, &bad[0].observed)
}

const WEB: &str = r#"identity = { kind = "service", service = "web" }"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_expectations_fail_with_what_was_seen() {
    let (r, v) = run(
        &cfg(),
        &format!(
            r#"[setup]
intentions = [{{ source = "web", action = "allow" }}]
[[steps]]
do = "expect"
name = "web wrongly expected refused"
check = {{ kind = "inbound", {WEB}, outcome = "refused" }}
"#
        ),
    )
    .await;
    assert_eq!(v, Verdict::Fail);
    let (name, verdict, observed) = failed(&r);
    assert_eq!(
        (name, verdict),
        ("web wrongly expected refused", Verdict::Fail)
    );
    assert!(observed.starts_with("allowed (echo after"), "{observed}");

    let (r, v) = run(
        &cfg(),
        &format!(
            r#"[[steps]]
do = "expect"
name = "web wrongly expected allowed"
check = {{ kind = "inbound", {WEB}, outcome = "allowed" }}
within = "300ms"
"#
        ),
    )
    .await;
    assert_eq!(v, Verdict::Fail);
    let (_, _, observed) = failed(&r);
    assert!(observed.starts_with("still refused ("), "{observed}");
    let check = &r.checks[0];
    assert_eq!(check.bound_ms, Some(300));
    assert_eq!(check.took_ms, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_leaf_and_upstream_checks_fail() {
    let (r, v) = run(
        &cfg(),
        &format!(
            r#"[setup]
intentions = [{{ source = "web", action = "allow" }}]
upstreams = [{{ name = "cache" }}]
instances = [{{ id = "cache-1", service = "cache" }}, {{ id = "cache-2", service = "cache", identity = "web" }}]
[[steps]]
do = "open"
conn = "c1"
{WEB}
[[steps]]
do = "mark"
name = "m"
[[steps]]
do = "expect"
name = "closed without any change"
check = {{ kind = "conn-closed", conn = "c1" }}
within = "500ms"
[[steps]]
do = "expect"
name = "a fresh leaf without rotation"
check = {{ kind = "served-leaf", differs_from_mark = "m" }}
[[steps]]
do = "expect"
name = "served by another service"
check = {{ kind = "served-leaf", service = "web" }}
[[steps]]
do = "expect"
name = "only the impostor"
check = {{ kind = "upstream", upstream = "cache", reach = ["cache-2"] }}
[[steps]]
do = "expect"
name = "nothing through the upstream"
check = {{ kind = "upstream-refused", upstream = "cache" }}
[[steps]]
do = "expect"
name = "a reset that never happened"
check = {{ kind = "index-reset-honoured" }}
"#
        ),
    )
    .await;
    assert_eq!(v, Verdict::Fail, "{:#?}", r.checks);
    let observed: Vec<(&str, &str)> = r
        .checks
        .iter()
        .map(|c| (c.name.as_str(), c.observed.as_str()))
        .collect();
    let find = |n: &str| {
        observed
            .iter()
            .find(|(k, _)| *k == n)
            .map(|(_, o)| *o)
            .unwrap()
    };
    assert!(find("closed without any change").starts_with("still open (no close seen)"));
    assert!(find("a fresh leaf without rotation").contains("still the leaf served at m"));
    assert!(find("served by another service").contains("names svc/db, not svc/web"));
    assert!(find("only the impostor").contains("reached cache-1, not one of [\"cache-2\"]"));
    assert!(
        find("nothing through the upstream").contains("answered \"cache-1\"")
            || find("nothing through the upstream").contains("bytes reached instance cache-1")
    );
    assert!(find("a reset that never happened").starts_with("no request after the reset"));
    assert!(r.checks.iter().all(|c| c.verdict == Verdict::Fail));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stable_for_window_sees_a_change() {
    // Allowed at first; the intention changes before the next check, which must hold for a
    // while: the contrary observation fails it with the time it took.
    let (r, v) = run(
        &cfg(),
        &format!(
            r#"[setup]
intentions = [{{ source = "web", action = "allow" }}]
[[steps]]
do = "open"
conn = "c1"
{WEB}
[[steps]]
do = "intention"
source = "web"
action = "deny"
[[steps]]
do = "expect"
name = "c1 stays open"
check = {{ kind = "conn-open", conn = "c1" }}
stable_for = "2s"
"#
        ),
    )
    .await;
    assert_eq!(v, Verdict::Fail);
    let (_, _, observed) = failed(&r);
    // Either the very first observation already sees it closed, or a later one does.
    assert!(
        observed.starts_with("not usable:") || observed.contains("ms later: not usable"),
        "{observed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lifetime_only_bound_above_the_cap_is_non_strict() {
    // The proxy closes connections at 2 s of age and declares only a 5 s maximum lifetime; the
    // scenario's cap (reauth) is 500 ms. The connection is closed by age: after the cap, within
    // the declared bound, with seconds to spare for a loaded machine (a proxy that never closes
    // it fails: the verdict is checked).
    let mut c = cfg();
    c.manifest.bounds.reauthorize_ms = None;
    c.manifest.bounds.max_lifetime_ms = Some(5000);
    c.manifest
        .proxy_config
        .insert("max_connection_lifetime_ms".into(), 2000.into());
    c.timeouts
        .set("reauth", Duration::from_millis(500))
        .unwrap();
    let (r, v) = run(
        &c,
        &format!(
            r#"[setup]
intentions = [{{ source = "web", action = "allow" }}]
[[steps]]
do = "open"
conn = "c1"
{WEB}
[[steps]]
do = "expect"
name = "closed within reauth"
check = {{ kind = "conn-closed", conn = "c1" }}
within = "reauth"
"#
        ),
    )
    .await;
    assert_eq!(v, Verdict::NonStrict, "{:#?}", r.checks);
    let check = &r.checks[0];
    assert_eq!(check.verdict, Verdict::NonStrict);
    assert_eq!(check.bound_ms, Some(500));
    let took = check.took_ms.unwrap();
    // Closed by its age (2 s, counted from the open before the window), not by the cap.
    assert!(took >= 1500, "took {took}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_that_never_listens_fails_readiness() {
    let mut c = cfg();
    c.manifest.command = "sh -c 'echo starting {proxy_id} >&2; exec sleep 1000'".into();
    c.timeouts.set("ready", Duration::from_millis(700)).unwrap();
    let (r, v) = run(
        &c,
        &format!("[[steps]]\ndo = \"expect\"\nname = \"x\"\ncheck = {{ kind = \"inbound\", {WEB}, outcome = \"allowed\" }}\n"),
    )
    .await;
    assert_eq!(v, Verdict::Fail);
    let (name, _, observed) = failed(&r);
    assert_eq!(name, "proxy ready");
    assert!(
        observed.starts_with("ports still refused connections after"),
        "{observed}"
    );
    let stderr = r
        .artifacts
        .iter()
        .find(|a| a.name == "proxy-stderr")
        .unwrap();
    assert!(
        stderr.content.contains("starting db-sidecar-proxy"),
        "{}",
        stderr.content
    );

    c.manifest.command = "sh -c 'exit 7'".into();
    let (r, v) = run(&c, "").await;
    assert_eq!(v, Verdict::Fail);
    let (_, _, observed) = failed(&r);
    assert!(
        observed.starts_with("the proxy exited (exit status: 7)"),
        "{observed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undeclared_features_and_scenario_bugs() {
    let mut c = cfg();
    c.manifest.features = vec!["l4".into()];
    let (r, v) = run(&c, "features = [\"l4\", \"l7-http\"]\n").await;
    assert_eq!(v, Verdict::NotSupported);
    assert_eq!(r.checks[0].observed, "not declared: l7-http");
    assert_eq!(r.duration_ms, 0);

    let ghost = "[[steps]]\ndo = \"expect\"\nname = \"x\"\ncheck = { kind = \"inbound\", identity = { kind = \"named\", name = \"ghost\" }, outcome = \"allowed\" }\n";
    let text = format!("id = \"t\"\ndescription = \"d\"\nprofile = \"core\"\n{ghost}");
    let caught = catalogue::parse("t.toml", &text).unwrap_err().to_string();
    assert!(
        caught.contains("no earlier `issue` step is named \"ghost\""),
        "the loader catches it: {caught}"
    );
    let (r, v) = run(&cfg(), ghost).await;
    assert_eq!(v, Verdict::Error);
    let e = r.error.unwrap();
    assert_eq!(e.kind, "step_invalid");
    assert!(
        e.message.contains("\"ghost\" was never issued"),
        "{}",
        e.message
    );

    let mut c = cfg();
    c.manifest.command = "/nonexistent/proxy".into();
    let (r, v) = run(&c, "").await;
    assert_eq!(v, Verdict::Error);
    assert_eq!(r.error.unwrap().kind, "proxy_spawn_failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xds_proxies_get_a_bootstrap_and_xds_checks() {
    let mut c = cfg();
    c.manifest.features = vec!["l4".into(), "xds".into()];
    // A "proxy" that only checks its bootstrap carries the token, then never connects.
    c.manifest.command =
        "sh -c 'grep -q x-consul-token \"$0\" && exec sleep 1000' {bootstrap}".into();
    c.timeouts.set("ready", Duration::from_millis(700)).unwrap();

    // Only request-log checks: not supported as a whole, nothing started.
    let (r, v) = run(
        &c,
        "[[steps]]\ndo = \"expect\"\nname = \"u\"\ncheck = { kind = \"agent-usage\", token_on_every_request = true }\n",
    )
    .await;
    assert_eq!(v, Verdict::NotSupported);
    assert_eq!(r.checks.len(), 1);
    assert_eq!(r.checks[0].name, "xds");
    assert!(
        r.checks[0].observed.contains("HTTP request log"),
        "{:?}",
        r.checks
    );

    // It never opens a stream: not ready, and the token check says why.
    let (r, v) = run(
        &c,
        &format!("[[steps]]\ndo = \"expect\"\nname = \"x\"\ncheck = {{ kind = \"inbound\", {WEB}, outcome = \"allowed\" }}\n"),
    )
    .await;
    assert_eq!(v, Verdict::Fail, "{r:#?}");
    let verdicts: Vec<(&str, Verdict, &str)> = r
        .checks
        .iter()
        .map(|c| (c.name.as_str(), c.verdict, c.observed.as_str()))
        .collect();
    let ready = &verdicts[0];
    assert_eq!((ready.0, ready.1), ("proxy ready", Verdict::Fail));
    assert!(ready.2.starts_with("ports still refused"), "{verdicts:?}");
    assert!(verdicts.contains(&(
        "every xDS push ACKed",
        Verdict::Pass,
        "0 responses, all ACKed"
    )));
    assert!(verdicts.contains(&(
        "token on every xDS stream",
        Verdict::Fail,
        "no xDS stream was opened"
    )));
    let cmd = r
        .artifacts
        .iter()
        .find(|a| a.name == "proxy-command")
        .unwrap();
    assert!(cmd.content.ends_with("/bootstrap.json"), "{}", cmd.content);
    assert!(r.artifacts.iter().any(|a| a.name == "xds-log"));
}

/// Records the order scenarios begin in.
#[derive(Default)]
struct Begins(std::sync::Mutex<Vec<String>>);

impl conformance::Progress for Begins {
    fn begin(&self, id: &str) {
        if let Ok(mut v) = self.0.lock() {
            v.push(id.to_owned());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scenarios_start_longest_first_and_the_report_keeps_the_planned_order() {
    let mut c = cfg();
    c.jobs = 1;
    c.durations = [("b", 10), ("c", 5_000)]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    let plan: Vec<conformance::Planned> = ["a", "b", "c"]
        .into_iter()
        .map(|id| {
            let text = format!(
                "id = \"{id}\"\ndescription = \"d\"\nprofile = \"core\"\n[setup]\n[[steps]]\ndo = \"expect\"\nname = \"web refused\"\ncheck = {{ kind = \"inbound\", {WEB}, outcome = \"refused\" }}\n"
            );
            let s: scenarios::Scenario = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
            conformance::Planned::Run(s)
        })
        .collect();
    let begins = std::sync::Arc::new(Begins::default());
    let report = conformance::run_all(&c, plan, begins.clone()).await;
    let started = begins.0.lock().map(|v| v.clone()).unwrap_or_default();
    // c (5 s recorded), b (10 ms), then a (not recorded).
    assert_eq!(started, ["c", "b", "a"]);
    let ids: Vec<&str> = report.scenarios.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
}

/// `--repeat`: a scenario made flaky on purpose. The proxy command alternates, through a state
/// file in a directory the test owns (each attempt's world is fresh), between the reference
/// proxy and a process that never listens: attempts 1 and 3 pass, attempt 2 fails its
/// readiness check. One job, so attempts run one after the other: deterministic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenario_that_alternates_is_graded_flaky_and_a_steady_one_is_not() {
    let state = tempfile::tempdir().unwrap();
    let flag = state.path().join("ran-once");
    let alternating = format!(
        "sh -c 'if [ -e {f} ]; then rm {f}; exec sleep 30; else : > {f}; \
         exec \"$0\" reference-proxy -proxy-id \"$1\"; fi' {{exe}} {{proxy_id}}",
        f = flag.display()
    );
    let scenario = |id: &str| -> scenarios::Scenario {
        let text = format!(
            "id = \"{id}\"\ndescription = \"d\"\nprofile = \"core\"\n[setup]\n\
             intentions = [{{ source = \"web\", action = \"allow\" }}]\n[[steps]]\ndo = \"expect\"\n\
             name = \"web allowed\"\ncheck = {{ kind = \"inbound\", {WEB}, outcome = \"allowed\" }}\n"
        );
        toml::from_str(&text).unwrap_or_else(|e| panic!("{e}"))
    };
    let repeated = |command: &str| {
        let mut c = cfg();
        c.manifest.command = command.to_owned();
        c.jobs = 1;
        c.repeat = 3;
        c.timeouts
            .set("ready", Duration::from_millis(1500))
            .unwrap();
        c
    };
    let plan = vec![conformance::Planned::Run(scenario("wobbly"))];
    let report = conformance::run_all(
        &repeated(&alternating),
        plan,
        std::sync::Arc::new(conformance::Silent),
    )
    .await;
    let s = &report.scenarios[0];
    let attempts: Vec<Verdict> = s.attempts.iter().map(|a| a.verdict).collect();
    assert_eq!(
        attempts,
        [Verdict::Pass, Verdict::Fail, Verdict::Pass],
        "{s:#?}"
    );
    assert_eq!(s.verdict, Verdict::Flaky);
    assert_eq!(s.disagreeing_checks(), ["proxy ready", "web allowed"]);
    // The representative attempt is the failing one.
    assert!(
        s.checks
            .iter()
            .any(|c| c.name == "proxy ready" && c.verdict == Verdict::Fail),
        "{:#?}",
        s.checks
    );
    assert_eq!(report.repeat, 3);
    let core = report.profile(reports::Profile::Core).unwrap();
    assert_eq!(
        (core.outcome, core.counts.flaky),
        (reports::Outcome::Failure, 1)
    );
    assert!(report.gate(reports::Profile::Core).is_err());
    assert_eq!(report.gate_with(reports::Profile::Core, true), Ok(()));

    // The reference proxy every time: the same verdict three times, not flaky.
    let steady = repeated(&Manifest::reference().command);
    let plan = vec![conformance::Planned::Run(scenario("steady"))];
    let report =
        conformance::run_all(&steady, plan, std::sync::Arc::new(conformance::Silent)).await;
    let s = &report.scenarios[0];
    assert_eq!(s.attempts.len(), 3);
    assert_eq!(s.verdict, Verdict::Pass, "{s:#?}");
}
