//! The sharded-run commands: `--shard K/N`'s slice of the plan (with `--durations`),
//! `conformance merge` of the shards' reports into one, and `conformance durations`, which
//! prints the table the slices are balanced by.

use std::path::Path;
use std::process::ExitCode;

use reports::{Report, ShardInfo};

use super::out::outln;
use super::summary::{environment_hint, exit_code, summarize};
use super::{DurationsArgs, MergeArgs};
use crate::error::Error;
use crate::plan::shard::{self, ShardSpec};
use crate::plan::{Durations, Planned};

/// Shard `spec`'s part of the selected `plan`, balanced by `durations`.
pub(super) fn shard_plan(
    plan: Vec<Planned>,
    spec: ShardSpec,
    durations: &Durations,
    claimed: &[reports::Profile],
) -> (Vec<Planned>, ShardInfo) {
    shard::select(plan, spec, durations, claimed.to_vec())
}

pub(super) fn read_report(path: &Path) -> Result<Report, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
    Report::from_json(&text).map_err(|source| Error::ReadReport {
        path: path.to_owned(),
        source,
    })
}

/// `conformance merge -o DIR REPORT.json...`.
pub fn merge(args: &MergeArgs) -> Result<ExitCode, Error> {
    let shards = args
        .reports
        .iter()
        .map(|p| Ok((p.display().to_string(), read_report(p)?)))
        .collect::<Result<Vec<_>, Error>>()?;
    let claimed = shards
        .first()
        .and_then(|(_, r)| r.shard.as_ref())
        .map(|s| s.claimed.clone())
        .unwrap_or_default();
    let merged = reports::merge(&shards)?;
    let written =
        reports::write_all(&merged, &args.report_dir).map_err(|source| Error::ReportDir {
            path: args.report_dir.clone(),
            source,
        })?;
    outln!(
        "merged {} shard report(s): {} scenario(s)",
        shards.len(),
        merged.scenarios.len()
    );
    summarize(&merged, &claimed);
    for p in written {
        outln!("wrote {}", p.display());
    }
    if let Some(hint) = environment_hint(&merged, &claimed) {
        outln!("{hint}");
    }
    Ok(exit_code(&merged, &claimed))
}

/// `conformance durations REPORT.json...`: the durations table on stdout.
pub fn durations(args: &DurationsArgs) -> Result<ExitCode, Error> {
    let mut table = Durations::default();
    for path in &args.reports {
        table.extend(Durations::from_report(&read_report(path)?));
    }
    outln!("{}", table.to_toml().trim_end());
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests;
