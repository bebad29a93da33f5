//! [`Tamper`]: the self-test's deliberately broken environments (a plan-level choice the world
//! then builds in; the names are `scenarios::ENVIRONMENT_TAMPERS`).

use std::fmt;
use std::str::FromStr;

/// A deliberately broken environment, for scenarios that test the redirect rules rather than
/// the proxy (the names are `scenarios::ENVIRONMENT_TAMPERS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tamper {
    /// `redirect-wrong-uid`: the rules exempt another UID than the proxy's.
    RedirectWrongUid,
    /// `redirect-skip-inbound`: the application's port is left out of the inbound capture.
    RedirectSkipInbound,
    /// `redirect-ignore-exclusions`: the scenario's exclusions are not passed to the redirect
    /// step, so the traffic they name is captured too.
    RedirectIgnoreExclusions,
}

impl Tamper {
    /// The name scenario files use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RedirectWrongUid => "redirect-wrong-uid",
            Self::RedirectSkipInbound => "redirect-skip-inbound",
            Self::RedirectIgnoreExclusions => "redirect-ignore-exclusions",
        }
    }
}

impl FromStr for Tamper {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "redirect-wrong-uid" => Ok(Self::RedirectWrongUid),
            "redirect-skip-inbound" => Ok(Self::RedirectSkipInbound),
            "redirect-ignore-exclusions" => Ok(Self::RedirectIgnoreExclusions),
            other => Err(format!(
                "unknown environment tamper {other:?}; known: {}",
                scenarios::ENVIRONMENT_TAMPERS.join(", ")
            )),
        }
    }
}

impl fmt::Display for Tamper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
