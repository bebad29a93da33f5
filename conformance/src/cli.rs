//! The command line: `conformance run`, `conformance list`, `conformance gate`, `conformance
//! merge` and `conformance durations` (sharded runs), and the hidden `conformance
//! reference-proxy` (the bundled reference proxy, run in-process).
//!
//! Exit codes ([`EXIT_CODES`], also in `--help` and the README): 0 every claimed scenario ran
//! and passed; 1 a check failed or flaked, a scenario was non-strict or skipped; 2 usage or
//! harness error (also when any scenario ended `error`; reports are still written); 3 nothing
//! failed but claimed scenarios could not run in this environment (the last line names what is
//! missing and the fix); 130 / 143 interrupted by SIGINT / SIGTERM (`run`: the reports are
//! still written, with the scenarios it did not finish marked `interrupted`; the cleanup takes
//! at most 10 s, a second signal cuts it short). `gate` and `merge` answer the same way.

mod compare;
mod demo;
mod dial;
mod flags;
mod links;
mod list;
mod merge;
pub(crate) mod out;
mod preflight;
mod reference;
mod run;
mod signals;
pub(crate) mod summary;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

pub use self::list::list;
pub use self::merge::{durations, merge};
use self::out::outln;
pub use self::reference::{redirect_traffic, reference_proxy};
pub use self::run::run;
use crate::error::Error;
use crate::plan::ShardSpec;

/// Exit code: a claimed profile is not a success.
pub const EXIT_FAILED: u8 = 1;
/// Exit code: bad usage or the harness failed.
pub const EXIT_USAGE: u8 = 2;
/// Exit code: nothing failed, but claimed scenarios could not run in this environment (the
/// last line of the output names what is missing and the fix).
pub const EXIT_ENVIRONMENT: u8 = 3;

/// The exit codes, as `--help` prints them.
pub const EXIT_CODES: &str = "\
Exit codes (run, gate, merge):
  0    every claimed scenario ran and passed
  1    a check failed or flaked (or a scenario was non-strict or skipped)
  2    usage or harness error (nothing ran, or a scenario ended `error`)
  3    nothing failed, but claimed scenarios could not run in this environment;
       the last line names what is missing and the fix (e.g. apt-get install iptables, run as root)
  130  interrupted by SIGINT (143: SIGTERM); the reports are still written";

/// `conformance`.
#[derive(Debug, Parser)]
#[command(
    name = "conformance",
    version,
    after_help = EXIT_CODES,
    about = "Drive a Consul Connect proxy through the conformance scenarios against a simulated agent"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run scenarios against a proxy (default: the bundled reference proxy) and write reports.
    Run(Box<RunArgs>),
    /// List the scenarios: id, profile, features.
    List(ListArgs),
    /// Exit 0 only if PROFILE is a full success in REPORT (re-graded from its checks).
    Gate(GateArgs),
    /// Merge the report.json of every shard of a `run --shard K/N` into one report (all four
    /// renderings); refuses shards of different runs, a missing or doubled shard. Exit codes
    /// as `run`'s.
    Merge(MergeArgs),
    /// Print the durations table `run --shard` balances by (TOML, id = ms) from reports, e.g.
    /// `conformance durations report.json > scenarios/catalogue/durations.toml`.
    Durations(DurationsArgs),
    /// See a failing report: run the reference proxy with one deliberately broken behaviour
    /// (`--sabotage NAME`, from `conformance list --sabotages`) against the scenarios that
    /// catch it. Needs the separately built broken proxy (never part of a release build):
    /// `cargo build -p proxy-under-test --example sabotaged-proxy --features sabotage`.
    Demo(DemoArgs),
    /// Several proxies side by side: from their report.json files, a matrix of scenarios ×
    /// proxies (compare.md and compare.html in -o DIR), each cell linking to the scenario's
    /// details in that run's report.html.
    Compare(CompareArgs),
    /// Run the bundled reference proxy in-process (used by the default manifest).
    #[command(hide = true, name = "reference-proxy")]
    ReferenceProxy(ReferenceArgs),
    /// Install (or with -remove, delete) the transparent-proxy iptables rules for a sidecar:
    /// the bundled `redirect-traffic`, run as root before the proxy starts. Its own flags
    /// follow; `conformance redirect-traffic -help` lists them.
    #[command(name = "redirect-traffic", disable_help_flag = true)]
    RedirectTraffic(ReferenceArgs),
    /// Connect to ADDR, send LINE, print the answered line (the harness's dial as another UID).
    #[command(hide = true)]
    Dial(DialArgs),
}

/// `conformance dial ADDR LINE`.
#[derive(Debug, Args)]
pub struct DialArgs {
    /// Where to connect.
    pub addr: std::net::SocketAddr,
    /// The line to send.
    pub line: String,
}

/// `conformance run`.
#[derive(Debug, Args, Default)]
pub struct RunArgs {
    /// Command template of the proxy, e.g. 'my-proxy -proxy-id {proxy_id}' (placeholders:
    /// {proxy_id} {service} {agent_addr} {token} {token_file} {exe}; with feature xds also
    /// {grpc_addr} {bootstrap} {admin_port}). Default: the bundled reference proxy.
    #[arg(long, value_name = "TEMPLATE")]
    pub proxy_cmd: Option<String>,
    /// Run the proxy from this local container image (NAME[:TAG]) through Docker, with host
    /// networking and the scenario's files mounted at the same paths (replaces the manifest's
    /// `image`). The command template's program is then a path inside the image; without
    /// --manifest or --proxy-cmd, the reference proxy's image (scripts/build-images.sh).
    #[arg(long, value_name = "IMAGE")]
    pub proxy_image: Option<String>,
    /// Proxy manifest (TOML): name, version, command, features, bounds, proxy_config, image.
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    /// Declared features, comma-separated (replaces the manifest's).
    #[arg(long, value_name = "LIST")]
    pub features: Option<String>,
    /// A declared bound, e.g. reauthorize_ms=1000 (repeatable).
    #[arg(long, value_name = "NAME=MS")]
    pub bound: Vec<String>,
    /// Claimed profiles, comma-separated (core, l7, extended, transparent, l7-traffic, security); default: every
    /// profile run. Transparent scenarios need root, `ip` and `iptables` (else not supported).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub profile: Vec<String>,
    /// Only scenarios whose id matches (glob, repeatable or comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "GLOB")]
    pub scenario: Vec<String>,
    /// Report scenarios whose id matches as skipped (glob, repeatable or comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "GLOB")]
    pub skip: Vec<String>,
    /// Also load every *.toml scenario under DIR (repeatable).
    #[arg(long, value_name = "DIR")]
    pub scenario_dir: Vec<PathBuf>,
    /// Scenarios run at the same time (default: four per CPU, at most 8; they start longest first)
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Print the selected scenarios and exit.
    #[arg(long)]
    pub list: bool,
    /// Where report.json, junit.xml, report.md and report.html go.
    #[arg(long, value_name = "DIR", default_value = "conformance-report")]
    pub report_dir: PathBuf,
    /// Override a named timeout, e.g. propagation=10s (repeatable).
    #[arg(long, value_name = "NAME=DURATION")]
    pub timeout: Vec<String>,
    /// Base seed for generated scenarios (default: random; recorded in the report).
    #[arg(long)]
    pub seed: Option<u64>,
    /// For an xDS proxy (feature xds): how the sim sends leaf and roots, inline or sds
    /// (replaces the manifest's `[xds] tls_mode`; recorded in the report).
    #[arg(long, value_name = "MODE")]
    pub xds_tls_mode: Option<String>,
    /// Run only shard K of N (1-based) of the selected scenarios, e.g. 2/3: a stable partition
    /// balanced by recorded durations, the same in every job; `conformance merge` joins the
    /// shards' reports.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<ShardSpec>,
    /// The durations scenarios start by (longest first) and --shard balances by: a previous
    /// run's report.json (e.g. from a CI cache) or a table as `conformance durations` prints
    /// (default: the built-in scenarios/catalogue/durations.toml). Every shard must use the same.
    #[arg(long, value_name = "FILE")]
    pub durations: Option<PathBuf>,
    /// Run every selected scenario N times (each attempt a fresh world and proxy, the same
    /// seed); a scenario whose attempts disagree is graded flaky, which fails its profile
    /// unless --allow-flaky.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// A flaky scenario does not by itself fail its profile (it is still reported as flaky).
    #[arg(long)]
    pub allow_flaky: bool,
    /// Stop at the first scenario that fails (or whose harness fails): scenarios already
    /// running finish, no other starts; those are reported skipped ("not started:
    /// --fail-fast"), so the profiles they belong to are partial.
    #[arg(long)]
    pub fail_fast: bool,
}

/// `conformance list`.
#[derive(Debug, Args, Default)]
pub struct ListArgs {
    /// Also load every *.toml scenario under DIR (repeatable).
    #[arg(long, value_name = "DIR")]
    pub scenario_dir: Vec<PathBuf>,
    /// Only these profiles.
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub profile: Vec<String>,
    /// List the sabotages `conformance demo --sabotage NAME` can show, with the scenarios that
    /// catch each.
    #[arg(long)]
    pub sabotages: bool,
}

/// `conformance compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The report.json of each proxy's run (one column each, in this order).
    #[arg(required = true, value_name = "REPORT.json")]
    pub reports: Vec<PathBuf>,
    /// Where compare.md and compare.html go.
    #[arg(
        short = 'o',
        long,
        value_name = "DIR",
        default_value = "conformance-compare"
    )]
    pub out: PathBuf,
    /// Write only the Markdown matrix, to FILE (e.g. docs/compatibility.md).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Link each scenario id to its catalogue file under this path prefix (e.g.
    /// ../scenarios/catalogue).
    #[arg(long, value_name = "PREFIX")]
    pub catalogue: Option<String>,
    /// Also write each input reduced to its verdicts (small enough to commit) into DIR, named
    /// after the input's directory; `compare` reads them back like any report.
    #[arg(long, value_name = "DIR")]
    pub slim: Option<PathBuf>,
}

/// `conformance demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// The broken behaviour (`conformance list --sabotages` names them), e.g. ignore-deny.
    #[arg(long, value_name = "NAME", default_value = "ignore-deny")]
    pub sabotage: String,
    /// The sabotage-enabled reference proxy (default: `examples/sabotaged-proxy` beside this
    /// binary, where cargo builds it).
    #[arg(long, value_name = "PATH")]
    pub proxy_bin: Option<PathBuf>,
    /// Where the reports go.
    #[arg(long, value_name = "DIR", default_value = "conformance-demo")]
    pub report_dir: PathBuf,
}

/// `conformance gate`.
#[derive(Debug, Args)]
pub struct GateArgs {
    /// A report.json written by `conformance run`.
    pub report: PathBuf,
    /// The profile that must be a full success.
    #[arg(long)]
    pub profile: String,
    /// A flaky scenario does not by itself fail the profile (decided here, whatever the run
    /// that wrote the report allowed).
    #[arg(long)]
    pub allow_flaky: bool,
}

/// `conformance merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The report.json of every shard (any order).
    #[arg(required = true, value_name = "REPORT.json")]
    pub reports: Vec<PathBuf>,
    /// Where the merged report.json, junit.xml, report.md and report.html go.
    #[arg(
        short = 'o',
        long,
        value_name = "DIR",
        default_value = "conformance-report"
    )]
    pub report_dir: PathBuf,
}

/// `conformance durations`.
#[derive(Debug, Args)]
pub struct DurationsArgs {
    /// Reports (a whole run, a merged run, or every shard's); an id in several keeps its
    /// longest duration.
    #[arg(required = true, value_name = "REPORT.json")]
    pub reports: Vec<PathBuf>,
}

/// `conformance reference-proxy ...` / `conformance redirect-traffic ...` (their own flags).
#[derive(Debug, Args)]
pub struct ReferenceArgs {
    /// Passed to the bundled program.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// Runs a parsed command line.
pub fn main(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Run(a) => run(&a),
        Command::List(a) => list(&a),
        Command::Gate(a) => gate(&a),
        Command::Merge(a) => merge(&a),
        Command::Durations(a) => durations(&a),
        Command::Demo(a) => demo::demo(&a),
        Command::Compare(a) => compare::compare(&a),
        Command::ReferenceProxy(a) => return reference_proxy(a.args),
        Command::RedirectTraffic(a) => return redirect_traffic(a.args),
        Command::Dial(a) => return dial::dial(a.addr, &a.line),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error [{}]: {e}", e.kind());
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// `conformance gate REPORT --profile P`.
pub fn gate(args: &GateArgs) -> Result<ExitCode, Error> {
    let profile: reports::Profile = args.profile.parse()?;
    let text = std::fs::read_to_string(&args.report)
        .map_err(|e| Error::io(format!("read {}", args.report.display()), e))?;
    let report = reports::Report::from_json(&text)?;
    match report.gate_with(profile, args.allow_flaky) {
        Ok(()) => {
            let flaky = report
                .scenarios
                .iter()
                .filter(|s| s.profile == profile && s.graded_verdict() == reports::Verdict::Flaky)
                .count();
            if flaky > 0 {
                outln!("profile {profile}: success ({flaky} flaky scenario(s) allowed)");
            } else {
                outln!("profile {profile}: success");
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(failure) => {
            if let Some(hint) = summary::environment_hint(&report, &[profile]) {
                outln!("profile {profile}: {}", failure.outcome);
                outln!("{hint}");
                return Ok(ExitCode::from(EXIT_ENVIRONMENT));
            }
            outln!("{failure}");
            for o in &failure.offenders {
                let Some(s) = report.scenarios.iter().find(|s| s.id == o.id) else {
                    continue;
                };
                outln!("  {} ({}):", o.id, o.verdict);
                if s.attempts.len() > 1 {
                    outln!("    {}", attempts_line(s));
                }
                if let Some(e) = &s.error {
                    outln!("    harness error [{}]: {}", e.kind, e.message);
                }
                for c in s
                    .checks
                    .iter()
                    .filter(|c| c.verdict != reports::Verdict::Pass)
                {
                    outln!(
                        "    {} [{}]: expected {}; observed {}",
                        c.name,
                        c.verdict,
                        c.expected,
                        c.observed
                    );
                }
            }
            Ok(ExitCode::from(EXIT_FAILED))
        }
    }
}

/// `attempts: pass, fail, pass; disagreeing checks: a, b` for a repeated scenario.
pub(crate) fn attempts_line(s: &reports::ScenarioResult) -> String {
    let verdicts: Vec<&str> = s.attempts.iter().map(|a| a.verdict.as_str()).collect();
    let mut line = format!("attempts: {}", verdicts.join(", "));
    let disagreeing = s.disagreeing_checks();
    if !disagreeing.is_empty() {
        line.push_str("; disagreeing checks: ");
        line.push_str(&disagreeing.join(", "));
    }
    line
}

/// Parses a profile name of the scenario model.
pub(crate) fn parse_profile(name: &str) -> Result<scenarios::Profile, Error> {
    match name.trim() {
        "core" => Ok(scenarios::Profile::Core),
        "l7" => Ok(scenarios::Profile::L7),
        "extended" => Ok(scenarios::Profile::Extended),
        "transparent" => Ok(scenarios::Profile::Transparent),
        "l7-traffic" => Ok(scenarios::Profile::L7Traffic),
        "security" => Ok(scenarios::Profile::Security),
        other => Err(Error::Usage(format!(
            "unknown profile {other:?}: expected core, l7, extended, transparent, l7-traffic or security"
        ))),
    }
}

#[cfg(test)]
mod tests;
