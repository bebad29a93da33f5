//! Playing a scenario in its world: the world built, the redirect rules installed (transparent
//! mode), the proxy started and awaited, xDS settled, the steps run by `exec`, then the proxy
//! torn down and its output, the request log and the xDS log recorded. Every stage can be
//! cancelled by the run's [`Interrupt`].

use std::path::PathBuf;
use std::time::Duration;

use reports::{CheckResult, EventKind, Requirement, ScenarioResult, TimelineEvent, Verdict};
use scenarios::Scenario;
use tokio::time::Instant;

use super::cancel::{self, Interrupt, Signal};
use super::scenario::ms;
use super::{RunConfig, artifacts, launch, transparent, xds};
use crate::error::Error;
use crate::exec::Exec;
use crate::world::World;

/// Plays `scenario` (seeded with `seed`, started at `started`) into `result`; `pod` is the
/// network-namespace node and `iptables` path of a transparent scenario.
pub(super) async fn play(
    cfg: &RunConfig,
    scenario: &Scenario,
    seed: u64,
    started: Instant,
    result: &mut ScenarioResult,
    pod: Option<(crate::netns::Node, PathBuf)>,
) -> Result<(), Error> {
    let (node, iptables) = pod.unzip();
    let interrupt = &cfg.interrupt;
    let cut = |result: &mut ScenarioResult, sig: Signal, what: &str| {
        let detail = format!("the run was cancelled {what}; its world was torn down");
        cancel::mark(result, sig, ms(started.elapsed()), &detail);
    };
    let build = World::build(scenario, &cfg.manifest, &cfg.timeouts, seed, node);
    let mut world = match until_cancelled(interrupt, build).await {
        Ok(w) => w?,
        Err(sig) => {
            cut(result, sig, "while its world was being built");
            return Ok(());
        }
    };
    if let (Some(cmd), Some(iptables)) = (
        world.redirect_command(&cfg.manifest, &cfg.exe, cfg.tamper)?,
        iptables,
    ) {
        transparent::redirect(&cmd, &iptables, &mut result.artifacts).await?;
        result.timeline.push(TimelineEvent::new(
            ms(started.elapsed()),
            EventKind::Step,
            "redirect rules installed",
        ));
    }
    let command = world.proxy_command(&cfg.manifest, &cfg.exe)?;
    result.artifacts.push(reports::Artifact::text(
        "proxy-command",
        command.argv.join(" "),
    ));
    let at = |t: Instant| ms(t.saturating_duration_since(started));
    let image = cfg.manifest.image_ref()?;
    let launch = launch::Launched::start(&command, image.as_ref(), world.dir());
    let mut proxy = match until_cancelled(interrupt, launch).await {
        Ok(p) => p?,
        Err(sig) => {
            cut(result, sig, "while the proxy was being started");
            return Ok(());
        }
    };
    let spawned_ms = at(Instant::now());
    let mut event = TimelineEvent::new(spawned_ms, EventKind::Step, "proxy started");
    if let Some(detail) = proxy.started_detail() {
        event = event.detail(detail);
    }
    result.timeline.push(event);
    let mut ready_timeout = cfg.timeouts.get("ready").unwrap_or(Duration::from_secs(30));
    if scenario.setup.ready_optional {
        // A proxy that fails closed may never listen: wait no longer than a change takes.
        let propagation = cfg
            .timeouts
            .get("propagation")
            .unwrap_or(Duration::from_secs(5));
        ready_timeout = ready_timeout.min(propagation);
    }
    let targets = world.ready_addrs();
    let on: Vec<String> = targets.iter().map(ToString::to_string).collect();
    let on = on.join(", ");
    let wait = super::progress::waiting_on(
        &result.id,
        &on,
        ready_timeout,
        proxy.wait_ready(&targets, ready_timeout),
    );
    let ready = match until_cancelled(interrupt, wait).await {
        Ok(r) => Some(r),
        Err(sig) => {
            cut(result, sig, "while it waited for the proxy to be ready");
            None
        }
    };
    let mut listening = true;
    let ready = match ready {
        Some(Err(not_ready)) if scenario.setup.ready_optional => {
            listening = false;
            result.timeline.push(
                TimelineEvent::new(at(Instant::now()), EventKind::Observation, "proxy ready")
                    .detail(format!(
                        "not listening after {} ms ({not_ready}); the scenario allows a proxy \
                         that fails closed by not listening, so its steps run now",
                        ready_timeout.as_millis()
                    )),
            );
            Some(Ok(ready_timeout))
        }
        other => other,
    };
    let outcome = match ready {
        None => Ok(()),
        Some(Err(not_ready)) => {
            let check = CheckResult::new(
                crate::plan::catch::PROXY_READY,
                Requirement::Must,
                Verdict::Fail,
                format!(
                    "the inbound listener and every upstream listener accept connections within \
                     ready ({} ms)",
                    ready_timeout.as_millis()
                ),
                not_ready.to_string(),
            )
            .at(at(Instant::now()));
            result.checks.push(check);
            Ok(())
        }
        Some(Ok(took)) => {
            if listening {
                result.timeline.push(
                    TimelineEvent::new(at(Instant::now()), EventKind::Observation, "proxy ready")
                        .detail(format!("ports accepted after {} ms", took.as_millis()))
                        .ok(true),
                );
            }
            if world.xds.is_some() {
                // Envoy opens listeners from LDS; let it answer every push before step one.
                let settle = xds::settle(world.control().xds_log(), ready_timeout);
                if let Ok((settled, _)) = until_cancelled(interrupt, settle).await {
                    result
                        .timeline
                        .push(xds::answered_event(at(Instant::now()), settled));
                }
            }
            let mut exec = Exec::new(&mut world, &cfg.timeouts, cfg.manifest.bounds, started)
                .with_output([proxy.stdout(), proxy.stderr()])
                .with_exe(&cfg.exe);
            let r = match until_cancelled(interrupt, exec.run(&scenario.steps)).await {
                Ok(r) => r,
                Err(sig) => {
                    // Dropping the steps' future drops their clients, probes and fault guards.
                    cut(result, sig, "while its steps ran");
                    Ok(())
                }
            };
            result.timeline.append(&mut exec.timeline);
            result.checks.append(&mut exec.checks);
            r
        }
    };
    // The xDS log as it stands while the proxy still runs (its streams count as open).
    let xds_entries = match &world.xds {
        Some(_) => {
            let log = world.control().xds_log();
            let propagation = cfg
                .timeouts
                .get("propagation")
                .unwrap_or(Duration::from_secs(5));
            // Cancelled: take the log as it stands, without waiting for it to settle.
            let wait = if interrupt.signal().is_some() {
                Duration::ZERO
            } else {
                propagation
            };
            Some(xds::settle(log, wait).await.1)
        }
        None => None,
    };
    let down = proxy.teardown(cfg.grace).await;
    let mut stopped = TimelineEvent::new(at(Instant::now()), EventKind::Step, "proxy stopped")
        .detail(format!("exit: {}", down.exit));
    if down.killed {
        stopped = stopped.detail(format!(
            "exit: {} (SIGKILL after {:?} grace)",
            down.exit, cfg.grace
        ));
    }
    result.timeline.push(stopped);
    result.timeline.extend(artifacts::log_events(
        proxy.stdout(),
        proxy.stderr(),
        spawned_ms,
    ));
    result.timeline.sort_by_key(|e| e.at_ms);
    result.artifacts.extend(artifacts::collect(
        proxy.stdout(),
        proxy.stderr(),
        &world.control().request_log(),
    ));
    let Some(entries) = xds_entries else {
        return outcome;
    };
    let log = world.control().xds_log();
    let error = xds::record(result, &entries, log, &world.token, at(Instant::now()));
    match (outcome, error) {
        (Ok(()), Some(e)) => Err(e),
        (outcome, _) => outcome,
    }
}

/// `fut`'s output, or the signal that cancelled the run first (`fut` is then dropped).
async fn until_cancelled<T>(
    interrupt: &Interrupt,
    fut: impl Future<Output = T>,
) -> Result<T, Signal> {
    tokio::select! {
        biased;
        t = fut => Ok(t),
        sig = interrupt.cancelled() => Err(sig),
    }
}
