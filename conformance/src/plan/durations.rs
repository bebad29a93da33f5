//! The recorded scenario durations by id: the checked-in table
//! (`scenarios/catalogue/durations.toml`), a previous run's `report.json` or a table given with
//! `--durations FILE`, and the table `conformance durations` prints. `--shard` balances by it
//! and scenarios start longest first by it.

use std::collections::BTreeMap;
use std::path::Path;

use reports::{Report, Verdict};

use crate::error::Error;

/// The checked-in durations of the catalogue (regenerate with `conformance durations`).
pub const RECORDED: &str = include_str!("../../../scenarios/catalogue/durations.toml");

/// The weight of every scenario when no duration at all is recorded.
const FALLBACK_MS: u64 = 1000;

/// Recorded durations by scenario id, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Durations(pub BTreeMap<String, u64>);

impl Durations {
    /// Parses a durations table: one `scenario-id = milliseconds` per line (TOML).
    pub fn parse(origin: &str, text: &str) -> Result<Self, Error> {
        toml::from_str(text)
            .map(Self)
            .map_err(|e| Error::Usage(format!("{origin}: not a durations table (id = ms): {e}")))
    }

    /// The durations of the scenarios a report ran (skipped, not-supported and zero-length
    /// ones say nothing about how long a scenario takes).
    pub fn from_report(report: &Report) -> Self {
        Self(
            report
                .scenarios
                .iter()
                .filter(|s| !matches!(s.verdict, Verdict::Skipped | Verdict::NotSupported))
                .filter(|s| s.duration_ms > 0)
                .map(|s| (s.id.clone(), s.duration_ms))
                .collect(),
        )
    }

    /// Reads `--durations FILE`: a `report.json` (a previous run's, e.g. from a CI cache) or a
    /// durations table.
    pub fn read(path: &Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
        if path.extension().is_some_and(|e| e == "json") {
            let report = Report::from_json(&text).map_err(|e| {
                Error::Usage(format!("{}: not a conformance report: {e}", path.display()))
            })?;
            return Ok(Self::from_report(&report));
        }
        Self::parse(&path.display().to_string(), &text)
    }

    /// The checked-in table (`scenarios/catalogue/durations.toml`).
    pub fn recorded() -> Result<Self, Error> {
        Self::parse("scenarios/catalogue/durations.toml", RECORDED)
    }

    /// Adds `other`'s entries, keeping the longer duration of an id in both.
    pub fn extend(&mut self, other: Self) {
        for (id, ms) in other.0 {
            let slot = self.0.entry(id).or_insert(ms);
            *slot = (*slot).max(ms);
        }
    }

    /// The median recorded duration (the weight of a scenario with none).
    pub fn median(&self) -> u64 {
        let mut v: Vec<u64> = self.0.values().copied().collect();
        v.sort_unstable();
        match v.len() {
            0 => FALLBACK_MS,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2,
        }
    }

    /// The table as TOML, with a header saying how to regenerate it.
    pub fn to_toml(&self) -> String {
        let mut out = String::from(
            "# Recorded scenario durations (ms) that `conformance run --shard K/N` balances shards\n\
             # by; a scenario not listed weighs the median. Regenerate from a full run:\n\
             #   cargo run -p conformance -- run --report-dir /tmp/r\n\
             #   cargo run -p conformance -- durations /tmp/r/report.json > scenarios/catalogue/durations.toml\n",
        );
        for (id, ms) in &self.0 {
            // Ids are TOML bare keys (letters, digits, `-`, `_`); quote anything else.
            let bare = !id.is_empty()
                && id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if bare {
                out.push_str(&format!("{id} = {ms}\n"));
            } else {
                out.push_str(&format!("{id:?} = {ms}\n"));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
