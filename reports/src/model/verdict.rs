//! The small enums of the model (verdicts, profiles, requirement levels, profile outcomes) and
//! the per-profile tally.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::ReportError;

/// How one check (or one scenario, as the worst of its checks) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The requirement holds.
    Pass,
    /// A MUST does not hold.
    Fail,
    /// Every MUST holds, a SHOULD does not.
    NonStrict,
    /// The proxy (or the environment) does not support what this needs; not counted.
    NotSupported,
    /// Not run because the user asked to skip it; counted (makes a profile partial).
    Skipped,
    /// The harness itself failed; says nothing about the proxy.
    Error,
    /// Run more than once (`--repeat N`), its attempts disagreed: a check's verdict or the
    /// scenario's differed between attempts (added in schema 1.2).
    Flaky,
    /// The run was interrupted (SIGINT/SIGTERM) while the scenario ran or before it started:
    /// what it did so far is recorded, but it was not fully verified. Sticky: set by the
    /// runner, kept by grading whatever the checks say.
    Interrupted,
}

/// The scenario groups a proxy can claim, in the order reports list them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    Core,
    L7,
    Extended,
    Transparent,
    L7Traffic,
    Security,
}

/// RFC 2119 level of a check: a failed `Should` only makes the scenario non-strict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Requirement {
    Must,
    Should,
}

/// The grade of a whole profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Every counted scenario passed.
    Success,
    /// None failed or errored, but some were skipped, non-strict, interrupted, or could not
    /// run in this environment.
    Partial,
    /// At least one scenario failed or errored, or was flaky (unless flaky was allowed).
    Failure,
    /// No counted scenario (none run, or all not supported).
    NotRun,
}

/// One profile's outcome and tally, computed by `Report::grade`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileResult {
    pub profile: Profile,
    pub outcome: Outcome,
    pub counts: Counts,
}

/// Scenarios of one profile by verdict. `total` includes `not_supported`, which the outcome
/// ignores.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub total: u32,
    pub pass: u32,
    pub fail: u32,
    pub non_strict: u32,
    pub skipped: u32,
    pub error: u32,
    pub not_supported: u32,
    /// Scenarios whose attempts disagreed (added in schema 1.2; 0 when absent).
    #[serde(default)]
    pub flaky: u32,
    /// Scenarios cut short (or never started) by an interrupted run (omitted when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub interrupted: u32,
}

// === impl Verdict ===

impl Verdict {
    /// Every verdict, worst first (the order reports list non-passing scenarios in).
    pub const WORST_FIRST: [Self; 8] = [
        Self::Error,
        Self::Interrupted,
        Self::Fail,
        Self::Flaky,
        Self::NonStrict,
        Self::Skipped,
        Self::NotSupported,
        Self::Pass,
    ];

    /// The stable kebab-case name used in JSON and every rendering.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail => "fail",
            Self::NonStrict => "non-strict",
            Self::NotSupported => "not-supported",
            Self::Skipped => "skipped",
            Self::Error => "error",
            Self::Flaky => "flaky",
            Self::Interrupted => "interrupted",
        }
    }

    /// Position in [`Verdict::WORST_FIRST`] (0 = worst).
    pub fn rank(self) -> usize {
        match self {
            Self::Error => 0,
            Self::Interrupted => 1,
            Self::Fail => 2,
            Self::Flaky => 3,
            Self::NonStrict => 4,
            Self::Skipped => 5,
            Self::NotSupported => 6,
            Self::Pass => 7,
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

// === impl Profile ===

impl Profile {
    /// Every profile, in report order.
    pub const ALL: [Self; 6] = [
        Self::Core,
        Self::L7,
        Self::Extended,
        Self::Transparent,
        Self::L7Traffic,
        Self::Security,
    ];

    /// The stable kebab-case name (`core`, `l7`, `extended`, `transparent`, `l7-traffic`, `security`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Core => "core",
            Self::L7 => "l7",
            Self::Extended => "extended",
            Self::Transparent => "transparent",
            Self::L7Traffic => "l7-traffic",
            Self::Security => "security",
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Profile {
    type Err = ReportError;

    /// Parses the kebab-case name, as `conformance gate --profile core` receives it.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| ReportError::UnknownProfile { name: s.to_owned() })
    }
}

// === impl Requirement ===

impl Requirement {
    /// `must` or `should`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Must => "must",
            Self::Should => "should",
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

// === impl Outcome ===

impl Outcome {
    /// The stable kebab-case name (`success`, `partial`, `failure`, `not-run`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Partial => "partial",
            Self::Failure => "failure",
            Self::NotRun => "not-run",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

// === impl Counts ===

impl Counts {
    /// Adds one scenario with `verdict` to the tally.
    pub fn add(&mut self, verdict: Verdict) {
        self.total += 1;
        let slot = match verdict {
            Verdict::Pass => &mut self.pass,
            Verdict::Fail => &mut self.fail,
            Verdict::NonStrict => &mut self.non_strict,
            Verdict::Skipped => &mut self.skipped,
            Verdict::Error => &mut self.error,
            Verdict::NotSupported => &mut self.not_supported,
            Verdict::Flaky => &mut self.flaky,
            Verdict::Interrupted => &mut self.interrupted,
        };
        *slot += 1;
    }

    /// Scenarios that count towards the outcome (all but not-supported).
    pub fn counted(&self) -> u32 {
        self.total - self.not_supported
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_serde() {
        for v in Verdict::WORST_FIRST {
            assert_eq!(serde_json::to_value(v).unwrap(), v.as_str());
        }
        for p in Profile::ALL {
            assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
            assert_eq!(p.as_str().parse::<Profile>().unwrap(), p);
        }
        for o in [
            Outcome::Success,
            Outcome::Partial,
            Outcome::Failure,
            Outcome::NotRun,
        ] {
            assert_eq!(serde_json::to_value(o).unwrap(), o.as_str());
        }
        for r in [Requirement::Must, Requirement::Should] {
            assert_eq!(serde_json::to_value(r).unwrap(), r.as_str());
        }
    }

    #[test]
    fn worst_first_is_ranked() {
        for (i, v) in Verdict::WORST_FIRST.into_iter().enumerate() {
            assert_eq!(v.rank(), i);
        }
    }

    #[test]
    fn unknown_profile_is_an_error() {
        let err = "Core".parse::<Profile>().unwrap_err();
        assert_eq!(err.kind(), "unknown_profile");
        assert!(
            err.to_string().contains("core, l7, extended, transparent"),
            "{err}"
        );
    }
}
