//! The transparent-mode parts of a run: whether the environment can run such scenarios at
//! all (reported as not supported, never as passed, when it cannot) and the one-shot redirect
//! step run in the pod before the proxy starts. (The self-test's deliberately broken
//! environments are part of the plan: `crate::plan::Tamper`.)

use std::process::Stdio;
use std::time::Duration;

use reports::{Artifact, CheckResult, Requirement, ScenarioResult, Verdict};
use tokio::process::Command;

use crate::error::Error;
use crate::proxy::ProxyCommand;

/// The redirect step must finish within this long.
const REDIRECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Marks `result` not supported because this machine cannot run transparent scenarios.
pub(super) fn not_supported_here(result: &mut ScenarioResult, why: &str) {
    result.mark_not_supported();
    result.checks.push(CheckResult::new(
        reports::ENVIRONMENT_CHECK,
        Requirement::Must,
        Verdict::NotSupported,
        "root, `ip`, `iptables` and network namespaces (transparent scenarios run in \
         namespaces of their own)",
        format!("not supported by the environment: {why}"),
    ));
}

/// Runs the redirect step to completion; its output becomes an artifact, and so does the nat
/// table it left (`iptables-save -t nat`).
pub(super) async fn redirect(
    cmd: &ProxyCommand,
    iptables: &std::path::Path,
    artifacts: &mut Vec<Artifact>,
) -> Result<(), Error> {
    let (mut c, _) = cmd.command("redirect")?;
    let line = cmd.argv.join(" ");
    let out = tokio::time::timeout(REDIRECT_TIMEOUT, c.output())
        .await
        .map_err(|_| {
            Error::Redirect(format!(
                "`{line}` did not finish within {REDIRECT_TIMEOUT:?}"
            ))
        })?
        .map_err(|e| Error::Redirect(format!("cannot run `{line}`: {e}")))?;
    let text = format!(
        "$ {line}\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    artifacts.push(Artifact::text("redirect-traffic", text.clone()));
    if !out.status.success() {
        return Err(Error::Redirect(format!(
            "the redirect step failed ({}): {}",
            out.status,
            text.lines().last().unwrap_or_default()
        )));
    }
    let iptables_save = iptables.with_file_name("iptables-save");
    if let Ok(save) = Command::new(&iptables_save)
        .args(["-t", "nat"])
        .stdin(Stdio::null())
        .output()
        .await
    {
        let rules = String::from_utf8_lossy(&save.stdout).into_owned();
        artifacts.push(Artifact::text("nat-rules", rules));
    }
    Ok(())
}
