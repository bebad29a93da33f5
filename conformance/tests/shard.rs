//! Sharded runs end to end with the real binary: a small selection of fast scenarios run
//! unsharded and as 3 shards (`run --shard K/3`), merged (`merge`), gives the same
//! per-scenario verdicts, profile outcomes, exit code and `gate` exits, against the clean
//! reference proxy and against a sabotaged one; and `merge` refuses shards that are not one run.

use std::path::Path;
use std::process::{Command, Output};

use reports::{Outcome, Profile, Report, Verdict};

/// Fast scenarios of three profiles (each well under a second on the reference proxy).
const SELECTION: &str = "served-identity,l4-allow-deny,upstream-basic,ca-intermediate-chain,\
                         l7-path-method-header,l7-grpc-method,config-change";

fn conformance(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_conformance"))
        .args(args)
        .current_dir(dir)
        .env_remove("CI")
        .output()
        .unwrap()
}

fn explain(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn read(path: &Path) -> Report {
    Report::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Per-scenario verdicts and per-profile outcomes.
type Grades = (Vec<(String, Verdict)>, Vec<(Profile, Outcome)>);

/// What must not change between an unsharded run and its merged shards.
fn verdicts(r: &Report) -> Grades {
    (
        r.scenarios
            .iter()
            .map(|s| (s.id.clone(), s.verdict))
            .collect(),
        r.profiles.iter().map(|p| (p.profile, p.outcome)).collect(),
    )
}

/// Runs `extra` unsharded into `whole/` and as 3 shards into `shard-K/`, merges them into
/// `merged/`, checks both say the same, and returns (run exit, merged report).
fn whole_and_merged(tmp: &Path, extra: &[&str]) -> (Option<i32>, Report) {
    let base = ["run", "--scenario", SELECTION, "--seed", "7", "--jobs", "2"];
    let run = |dir: &str, shard: Option<String>| {
        let mut args: Vec<&str> = base.to_vec();
        args.extend(extra);
        args.extend(["--report-dir", dir]);
        if let Some(s) = &shard {
            args.extend(["--shard", s]);
        }
        conformance(&args, tmp)
    };
    let whole = run("whole", None);
    let mut shard_exits = Vec::new();
    for k in 1..=3 {
        let out = run(&format!("shard-{k}"), Some(format!("{k}/3")));
        let r = read(&tmp.join(format!("shard-{k}/report.json")));
        let info = r.shard.as_ref().expect("a shard report records its shard");
        assert_eq!((info.index, info.count), (k, 3));
        assert_eq!(info.planned.len(), 7, "{info:?}");
        let ids: Vec<&String> = r.scenarios.iter().map(|s| &s.id).collect();
        assert_eq!(ids, info.mine.iter().collect::<Vec<_>>(), "only its own");
        assert!(!info.mine.is_empty(), "7 scenarios over 3 shards");
        assert!(
            r.environment.notes.contains(&info.note()),
            "{:?}",
            r.environment.notes
        );
        shard_exits.push(out.status.code());
    }
    // Shard order on the command line does not matter.
    let merge = conformance(
        &[
            "merge",
            "-o",
            "merged",
            "shard-3/report.json",
            "shard-1/report.json",
            "shard-2/report.json",
        ],
        tmp,
    );
    let (w, m) = (
        read(&tmp.join("whole/report.json")),
        read(&tmp.join("merged/report.json")),
    );
    assert_eq!(verdicts(&m), verdicts(&w), "{}", explain(&merge));
    assert_eq!(m.shard, None);
    let notes = m.environment.notes.join("\n");
    assert!(!notes.contains("merge joins the shards"), "{notes}");
    assert!(notes.contains("merged from 3 shards"), "{notes}");
    assert_eq!(m.seed, w.seed);
    assert_eq!(m.proxy, w.proxy);
    assert_eq!(
        merge.status.code(),
        whole.status.code(),
        "merge exits as run: {}\n{}",
        explain(&merge),
        explain(&whole)
    );
    for f in reports::REPORT_FILES {
        assert!(tmp.join("merged").join(f).is_file(), "{f}");
    }
    for p in Profile::ALL {
        let gate = |dir: &str| {
            let report = format!("{dir}/report.json");
            conformance(&["gate", &report, "--profile", p.as_str()], tmp)
                .status
                .code()
        };
        assert_eq!(gate("merged"), gate("whole"), "gate --profile {p}");
    }
    // A shard fails only for what it ran: its exit is the worst the whole run's could be.
    for code in shard_exits {
        assert!(code <= whole.status.code(), "{code:?} vs {whole:?}");
    }
    (whole.status.code(), m)
}

#[test]
fn three_shards_merge_into_the_unsharded_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let (exit, merged) = whole_and_merged(tmp.path(), &[]);
    assert_eq!(exit, Some(0));
    assert!(merged.scenarios.iter().all(|s| s.verdict == Verdict::Pass));
    for p in [Profile::Core, Profile::L7, Profile::Extended] {
        assert_eq!(merged.gate(p), Ok(()), "{p}");
    }

    // The durations table comes from the reports.
    let out = conformance(&["durations", "whole/report.json"], tmp.path());
    let table = String::from_utf8_lossy(&out.stdout);
    for id in SELECTION.split(',') {
        assert!(table.contains(&format!("\n{id} = ")), "{id}: {table}");
    }

    // Merge refuses what is not every shard of one run, by name, with exit 2.
    let refused = |args: &[&str], kind: &str| {
        let out = conformance(args, tmp.path());
        assert_eq!(out.status.code(), Some(2), "{}", explain(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&format!("error [{kind}]")), "{stderr}");
    };
    let (s1, s2) = ("shard-1/report.json", "shard-2/report.json");
    refused(&["merge", "-o", "x", s1, s2], "shard_missing");
    refused(
        &["merge", "-o", "x", s1, s2, "shard-3/report.json", s2],
        "shard_duplicate",
    );
    refused(
        &["merge", "-o", "x", "whole/report.json"],
        "not_a_shard_report",
    );
    let mut other = read(&tmp.path().join("shard-3/report.json"));
    other.seed += 1;
    std::fs::write(tmp.path().join("other.json"), reports::to_json(&other)).unwrap();
    refused(&["merge", "-o", "x", s1, s2, "other.json"], "seed_mismatch");
    assert!(
        !tmp.path().join("x").exists(),
        "nothing written when refused"
    );
}

#[test]
fn a_sabotaged_proxy_fails_sharded_as_unsharded() {
    let tmp = tempfile::tempdir().unwrap();
    // Lets every connection through: l4-allow-deny's denied caller gets in.
    let (exit, merged) = whole_and_merged(
        tmp.path(),
        &[
            "--proxy-cmd",
            "{exe} reference-proxy --sabotage ignore-deny -proxy-id {proxy_id}",
            "--features",
            "l4,ca-rotation,upstreams,l7-http,l7-http2,l7-grpc,config-reload",
        ],
    );
    assert_eq!(exit, Some(1));
    let verdict = |id: &str| {
        merged
            .scenarios
            .iter()
            .find(|s| s.id == id)
            .map(|s| s.verdict)
    };
    assert_eq!(verdict("l4-allow-deny"), Some(Verdict::Fail));
    assert_eq!(verdict("served-identity"), Some(Verdict::Pass));
    assert!(merged.gate(Profile::Core).is_err());
}
