//! `conformance list` (and `run --list`): the selected scenarios, one a line (id, profile,
//! features, and whether the plan skips it).

use std::process::ExitCode;

use scenarios::{Profile, Scenario};

use super::ListArgs;
use super::flags::{profiles, scenarios};
use super::out::outln;
use crate::error::Error;
use crate::plan::catalogue::{self, Selection};

pub(super) fn print_list(plan: &[(Scenario, bool)]) {
    for (s, skipped) in plan {
        let p = match s.profile {
            Profile::Core => "core",
            Profile::L7 => "l7",
            Profile::Extended => "extended",
            Profile::Transparent => "transparent",
            Profile::L7Traffic => "l7-traffic",
            Profile::Security => "security",
        };
        let skip = if *skipped { "  (skipped)" } else { "" };
        outln!("{:<34} {:<11} {}{skip}", s.id, p, s.features.join(","));
    }
}

/// `conformance list`.
pub fn list(args: &ListArgs) -> Result<ExitCode, Error> {
    if args.sabotages {
        super::demo::list_sabotages();
        return Ok(ExitCode::SUCCESS);
    }
    let sel = Selection {
        profiles: profiles(&args.profile)?,
        ..Selection::default()
    };
    let plan: Vec<(Scenario, bool)> = catalogue::select(scenarios(&args.scenario_dir)?, &sel)
        .into_iter()
        .map(|p| (p.scenario().clone(), false))
        .collect();
    print_list(&plan);
    Ok(ExitCode::SUCCESS)
}
