//! One scenario, start to end: the features check, the generator's expansion with the
//! scenario's seed, the cases that are not supported here (xDS-only request-log checks, a
//! transparent scenario in an image or on a machine without namespaces), the pod of a
//! transparent scenario, and the result's harness error and duration. What happens in between
//! is `runner/play.rs`.

use std::time::Duration;

use reports::{CheckResult, ErrorInfo, Requirement, ScenarioResult, Verdict};
use scenarios::Scenario;
use tokio::time::Instant;

use super::play::play;
use super::{RunConfig, launch, scenario_seed, transparent, xds};
use crate::error::Error;
use crate::plan::catalogue;

/// Runs one scenario in a fresh world. Never fails: harness problems become the result's
/// `error`.
pub async fn run_scenario(cfg: &RunConfig, scenario: &Scenario) -> ScenarioResult {
    let mut result = ScenarioResult::new(
        &scenario.id,
        &scenario.description,
        profile(scenario.profile),
        scenario.features.clone(),
    );
    if let Err(missing) = cfg.manifest.supports(&scenario.features) {
        result.mark_not_supported();
        result.checks.push(CheckResult::new(
            "features",
            Requirement::Must,
            Verdict::NotSupported,
            format!("the proxy declares {}", scenario.features.join(", ")),
            format!("not declared: {}", missing.join(", ")),
        ));
        return result;
    }
    let started = Instant::now();
    let seed = scenario_seed(cfg.seed, &scenario.id);
    let scenario = if scenario.generate.is_some() {
        result.seed = Some(seed);
        match catalogue::expand(scenario, seed) {
            Ok(s) => s,
            Err(e) => return harness_error(result, &e, started),
        }
    } else {
        scenario.clone()
    };
    if cfg.manifest.is_xds() && crate::exec::only_request_log_checks(&scenario.steps) {
        xds::not_supported(&mut result);
        return result;
    }
    if scenario.setup.transparent.is_some() && cfg.manifest.image.is_some() {
        launch::transparent_not_supported(&mut result);
        return result;
    }
    if scenario.setup.ipv6
        && let Err(e) = std::net::TcpListener::bind("[::1]:0")
    {
        ipv6_not_supported_here(&mut result, &e.to_string());
        return result;
    }
    if scenario.setup.transparent.is_some() {
        let tools = match crate::netns::support() {
            Ok(t) => t,
            Err(why) => {
                transparent::not_supported_here(&mut result, &why);
                return result;
            }
        };
        let cfg = cfg.clone();
        let iptables = tools.iptables.clone();
        let blank = result.clone();
        let in_pod = crate::netns::run_in_pod(tools, move |node| async move {
            let r = play(
                &cfg,
                &scenario,
                seed,
                started,
                &mut result,
                Some((node, iptables)),
            )
            .await;
            finish(result, r, started)
        })
        .await;
        return in_pod.unwrap_or_else(|e| harness_error(blank, &e, started));
    }
    let r = play(cfg, &scenario, seed, started, &mut result, None).await;
    finish(result, r, started)
}

/// Marks `result` not supported because this machine has no IPv6 loopback.
fn ipv6_not_supported_here(result: &mut ScenarioResult, why: &str) {
    result.mark_not_supported();
    result.checks.push(CheckResult::new(
        reports::ENVIRONMENT_CHECK,
        Requirement::Must,
        Verdict::NotSupported,
        "IPv6 loopback (the scenario binds the app and instances on [::1])",
        format!("not supported by the environment: cannot bind [::1]: {why}"),
    ));
}

/// A played scenario's result, with its harness error (if any) and its duration.
fn finish(mut result: ScenarioResult, r: Result<(), Error>, started: Instant) -> ScenarioResult {
    match r {
        Ok(()) => {
            result.duration_ms = ms(started.elapsed());
            result
        }
        Err(e) => harness_error(result, &e, started),
    }
}

fn harness_error(mut result: ScenarioResult, e: &Error, started: Instant) -> ScenarioResult {
    result.error = Some(ErrorInfo::new(e.kind(), e.to_string()));
    result.duration_ms = ms(started.elapsed());
    result
}

pub(super) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The report's profile for a scenario's.
fn profile(p: scenarios::Profile) -> reports::Profile {
    match p {
        scenarios::Profile::Core => reports::Profile::Core,
        scenarios::Profile::L7 => reports::Profile::L7,
        scenarios::Profile::Extended => reports::Profile::Extended,
        scenarios::Profile::Transparent => reports::Profile::Transparent,
        scenarios::Profile::L7Traffic => reports::Profile::L7Traffic,
        scenarios::Profile::Security => reports::Profile::Security,
    }
}

/// A result with nothing recorded yet for `s`.
pub(super) fn blank(s: &Scenario) -> ScenarioResult {
    ScenarioResult::new(
        &s.id,
        &s.description,
        profile(s.profile),
        s.features.clone(),
    )
}
