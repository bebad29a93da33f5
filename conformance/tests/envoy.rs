//! The whole catalogue against a real Envoy 1.40 (`examples/envoy/proxy.toml`), in both TLS
//! modes of the simulated agent's xDS server (`inline`, `sds`), each graded scenario compared
//! with the checked-in expectation `examples/envoy/expected.toml` (per mode, per scenario: the
//! grade, and one line of why for every non-pass). A mismatch fails with both sides and the
//! scenario's failed checks; an `error` (a NACK, a push never answered) fails whatever was
//! expected. Trials run two at a time unless `--test-threads` says otherwise. A generated
//! scenario (`precedence-property`) is graded over the seeds `GENERATED_SEEDS`, its worst
//! grade counting, so its expectation does not hang on one seed's draw.
//!
//! Envoy: `ENVOY_BIN`, else `<workspace>/.tools/envoy-1.40.0/envoy/_bin/envoy`
//! (`scripts/install-envoy.sh`). Without it every trial is ignored with the reason, never
//! passed, unless `CONFORMANCE_REQUIRE_ENVOY=1` (set by `.ci/run`) makes that a failure.
//! After the run no Envoy started here may survive.

// Shared with the suite and the self-test; this test uses only part of it.
#[allow(dead_code)]
mod support;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use conformance::{Manifest, RunConfig};
use libtest_mimic::{Arguments, Failed, Trial};
use reports::Verdict;
use serde::Deserialize;

/// The TLS modes every scenario runs in.
const MODES: [&str; 2] = ["inline", "sds"];

/// One expectation.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expected {
    grade: String,
    #[serde(default)]
    why: Option<String>,
}

/// mode -> scenario id -> expectation.
type Expectations = BTreeMap<String, BTreeMap<String, Expected>>;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from(".."), Path::to_path_buf)
}

/// The Envoy binary, or why there is none.
fn envoy_bin() -> Result<PathBuf, String> {
    let (bin, from) = match std::env::var_os("ENVOY_BIN") {
        Some(b) => (PathBuf::from(b), "ENVOY_BIN"),
        None => (
            workspace().join(".tools/envoy-1.40.0/envoy/_bin/envoy"),
            "the default path (run scripts/install-envoy.sh, or set ENVOY_BIN)",
        ),
    };
    match std::fs::metadata(&bin) {
        Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => Ok(bin),
        Ok(_) => Err(format!(
            "{} ({from}) is not an executable file",
            bin.display()
        )),
        Err(e) => Err(format!("no Envoy at {} ({from}): {e}", bin.display())),
    }
}

/// The example manifest with `bin` as its program and `mode` as the sim's TLS mode.
fn manifest(bin: &Path, mode: &str) -> Result<Manifest, String> {
    let path = workspace().join("examples/envoy/proxy.toml");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut m = Manifest::parse(&path, &text).map_err(|e| e.to_string())?;
    let (_, args) = m
        .command
        .split_once(' ')
        .ok_or_else(|| format!("{}: command has no arguments", path.display()))?;
    let quoted = format!("'{}'", bin.display().to_string().replace('\'', r"'\''"));
    let command = format!("{quoted} {args}");
    m.set_command(&command);
    m.set_xds_tls_mode(mode).map_err(|e| e.to_string())?;
    m.validate("envoy test").map_err(|e| e.to_string())?;
    Ok(m)
}

fn expectations() -> Result<Expectations, String> {
    let path = workspace().join("examples/envoy/expected.toml");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The expectation file covers exactly the catalogue in every mode, with a why for every
/// non-pass and known grades only.
fn coverage(expected: &Expectations, ids: &[String]) -> Result<(), Failed> {
    let grades = [
        "pass",
        "fail",
        "non-strict",
        "not-supported",
        "skipped",
        "error",
    ];
    let mut problems = Vec::new();
    for mode in MODES {
        let Some(per) = expected.get(mode) else {
            problems.push(format!("no [{mode}] table"));
            continue;
        };
        for id in ids {
            if !per.contains_key(id) {
                problems.push(format!("[{mode}] has no entry for {id}"));
            }
        }
        for (id, e) in per {
            if !ids.contains(id) {
                problems.push(format!("[{mode}] {id} is not in the catalogue"));
            }
            if !grades.contains(&e.grade.as_str()) || e.grade == "error" {
                problems.push(format!("[{mode}] {id}: grade {:?} is not allowed", e.grade));
            }
            if e.grade != "pass" && e.why.as_deref().is_none_or(|w| w.trim().is_empty()) {
                problems.push(format!("[{mode}] {id}: a {} needs a why", e.grade));
            }
        }
    }
    for mode in expected.keys() {
        if !MODES.contains(&mode.as_str()) {
            problems.push(format!("unknown mode [{mode}]"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Failed::from(format!(
            "examples/envoy/expected.toml:\n  {}",
            problems.join("\n  ")
        )))
    }
}

/// Envoy processes that are children of this test process (started here, not reaped).
fn surviving_envoys() -> Vec<u32> {
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // "pid (comm) state ppid ..."
            let Some((head, tail)) = stat.rsplit_once(')') else {
                return false;
            };
            let comm = head.split_once('(').map_or("", |(_, c)| c);
            let ppid = tail.split_whitespace().nth(1).and_then(|p| p.parse().ok());
            comm == "envoy" && ppid == Some(me)
        })
        .collect()
}

/// The run seeds a generated scenario (`precedence-property`) is graded with, each expanding
/// into its own random intention sets: the grade is the worst of them.
const GENERATED_SEEDS: [u64; 5] = [1, 2, 3, 4, 5];

fn main() {
    let mut args = Arguments::from_args();
    if args.test_threads.is_none() {
        args.test_threads = Some(2);
    }
    let expected = Arc::new(expectations());
    let envoy = envoy_bin();
    let required = std::env::var("CONFORMANCE_REQUIRE_ENVOY").is_ok_and(|v| v == "1");
    let ignored = envoy.is_err() && !required;
    if let (Err(why), true) = (&envoy, ignored) {
        eprintln!("note: every Envoy trial is ignored (not passed): {why}");
    }
    let catalogue = support::scenarios();
    let ids: Vec<String> = catalogue.iter().map(|s| s.id.clone()).collect();
    let mut trials = Vec::new();
    {
        let expected = expected.clone();
        trials.push(Trial::test(
            "expected.toml covers the catalogue",
            move || {
                let e = expected.as_ref().as_ref().map_err(Failed::from)?;
                coverage(e, &ids)
            },
        ));
    }
    for mode in MODES {
        for s in &catalogue {
            let (s, envoy, expected) = (s.clone(), envoy.clone(), expected.clone());
            let name = format!("{mode}::{}", s.id);
            let trial = Trial::test(name, move || {
                let bin = envoy.map_err(|why| Failed::from(format!("Envoy is required: {why}")))?;
                let all = expected.as_ref().as_ref().map_err(Failed::from)?;
                let want = all.get(mode).and_then(|m| m.get(&s.id)).ok_or_else(|| {
                    Failed::from(format!(
                        "examples/envoy/expected.toml: no [{mode}] {}",
                        s.id
                    ))
                })?;
                let m = manifest(&bin, mode).map_err(Failed::from)?;
                let mut cfg = RunConfig::new(m, PathBuf::from(env!("CARGO_BIN_EXE_conformance")));
                // A generated scenario is graded over several seeds (its worst grade): one seed
                // would pin the grade to whichever cases that seed happens to draw.
                let seeds: &[u64] = if s.generate.is_some() {
                    &GENERATED_SEEDS
                } else {
                    &[0x5eed]
                };
                let mut worst = None;
                for &seed in seeds {
                    cfg.seed = seed;
                    let (result, verdict) = support::run(&cfg, &s);
                    let rank = |v: Verdict| u8::from(v != Verdict::Pass);
                    if worst.as_ref().is_none_or(|(_, w)| rank(verdict) > rank(*w)) {
                        worst = Some((result, verdict));
                    }
                }
                let (result, verdict) = worst.expect("at least one seed");
                let got = verdict.to_string();
                if verdict == Verdict::Error || got != want.grade {
                    return Err(Failed::from(format!(
                        "[{mode}] {}: expected {} ({}), graded {got}\n{}",
                        s.id,
                        want.grade,
                        want.why.as_deref().unwrap_or("no why"),
                        support::explain(&result, verdict)
                    )));
                }
                Ok(())
            })
            .with_ignored_flag(ignored);
            trials.push(trial);
        }
    }
    let conclusion = libtest_mimic::run(&args, trials);
    let left = surviving_envoys();
    if !left.is_empty() {
        eprintln!("error: Envoy processes survived the run: {left:?}");
        std::process::exit(101);
    }
    conclusion.exit();
}
