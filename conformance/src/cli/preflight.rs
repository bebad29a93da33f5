//! What `conformance run` checks before any scenario runs, so a mistake is one error (exit 2)
//! instead of the same failure in every scenario: the proxy program exists and is executable,
//! every `--scenario` glob matches a scenario (else the closest ids), and the declared
//! features let at least one selected scenario run (else how to declare them).

use std::path::{Path, PathBuf};

use scenarios::Scenario;

use crate::error::Error;
use crate::manifest::Manifest;
use crate::plan::Planned;
use crate::plan::catalogue::glob;

/// The proxy program of `m`'s command exists and is executable (on `PATH` for a bare name);
/// the bundled proxy (`{exe}`) and a program inside an image are not looked at here.
pub(crate) fn program(m: &Manifest) -> Result<(), Error> {
    if m.image.is_some() {
        return Ok(());
    }
    let mut words = crate::template::split(&m.command).map_err(|message| Error::Template {
        template: m.command.clone(),
        message,
    })?;
    m.resolve_program(&mut words);
    let Some(program) = words.first() else {
        return Err(Error::Usage("the proxy command is empty".into()));
    };
    if program.starts_with('{') {
        return Ok(());
    }
    let found = if program.contains('/') {
        Some(PathBuf::from(program))
    } else {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join(program))
                .find(|p| p.is_file())
        })
    };
    match found {
        None => Err(Error::Usage(format!(
            "the proxy program {program:?} (the first word of the proxy command) was not \
             found{}",
            if program.contains('/') {
                ""
            } else {
                " on PATH"
            },
        ))),
        Some(p) if !p.is_file() => Err(Error::Usage(format!(
            "the proxy program {} (the first word of the proxy command) does not exist or \
             is not a file",
            p.display(),
        ))),
        Some(p) if !executable(&p) => Err(Error::Usage(format!(
            "the proxy program {} is not executable (chmod +x {})",
            p.display(),
            p.display()
        ))),
        Some(_) => Ok(()),
    }
}

fn executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

/// Every `--scenario` glob matches some scenario of `all`; else the closest ids.
pub(crate) fn globs(all: &[Scenario], include: &[String]) -> Result<(), Error> {
    for g in include.iter().filter(|g| !g.trim().is_empty()) {
        if all.iter().any(|s| glob(g, &s.id)) {
            continue;
        }
        let close = closest(g, all.iter().map(|s| s.id.as_str()));
        return Err(Error::Usage(format!(
            "--scenario {g:?} matches no scenario; closest: {} (`conformance list` lists them all)",
            close.join(", ")
        )));
    }
    Ok(())
}

/// The three ids nearest to `pattern` (its `*`/`?` dropped) by edit distance.
pub(crate) fn closest<'a>(pattern: &str, ids: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let bare: String = pattern
        .chars()
        .filter(|c| !matches!(c, '*' | '?'))
        .collect();
    let mut scored: Vec<(usize, &str)> = ids
        .map(|id| {
            // A prefix typo weighs like the whole id: compare with the id's head too.
            let head: String = id.chars().take(bare.chars().count()).collect();
            (distance(&bare, id).min(distance(&bare, &head) + 1), id)
        })
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, id)| id).collect()
}

/// Levenshtein distance.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// At least one planned scenario (not skipped) needs only features `m` declares; else a usage
/// error naming `--features` and `--manifest` and what the selection needs.
pub(crate) fn features(plan: &[Planned], m: &Manifest) -> Result<(), Error> {
    let to_run: Vec<&Scenario> = plan
        .iter()
        .filter_map(|p| match p {
            Planned::Run(s) => Some(s),
            Planned::Skip(_) => None,
        })
        .collect();
    if to_run.is_empty() || to_run.iter().any(|s| m.supports(&s.features).is_ok()) {
        return Ok(());
    }
    let mut needed: Vec<&str> = to_run
        .iter()
        .flat_map(|s| s.features.iter().map(String::as_str))
        .collect();
    needed.sort_unstable();
    needed.dedup();
    let declared = if m.features.is_empty() {
        "no features".to_owned()
    } else {
        format!("features {}", m.features.join(","))
    };
    Err(Error::Usage(format!(
        "the proxy declares {declared}, so none of the {} selected scenario(s) can run; declare \
         what it supports with --features LIST (e.g. --features {}) or `features = [...]` in a \
         --manifest FILE (`conformance list` shows what each scenario needs)",
        to_run.len(),
        needed.join(",")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_ids_rank_a_prefix_typo_first() {
        let ids = [
            "mtls-basic",
            "intentions-deny",
            "intentions-allow",
            "leaf-rotation",
        ];
        assert_eq!(
            closest("intention*", ids.into_iter())[..2],
            ["intentions-allow", "intentions-deny"]
        );
        assert_eq!(closest("mtls-basc", ids.into_iter())[0], "mtls-basic");
    }

    #[test]
    fn a_missing_program_is_named() {
        let m = Manifest::from_command("/nonexistent/proxy -id {proxy_id}").unwrap();
        let e = program(&m).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/proxy"), "{e}");
        let m = Manifest::from_command("no-such-proxy-xyz -id {proxy_id}").unwrap();
        assert!(program(&m).unwrap_err().to_string().contains("on PATH"));
        assert!(program(&Manifest::reference()).is_ok());
        assert!(program(&Manifest::from_command("sh -c true").unwrap()).is_ok());
    }

    #[test]
    fn no_runnable_scenario_names_features() {
        let all = crate::plan::catalogue::builtin();
        let plan = crate::plan::catalogue::select(all, &Default::default());
        let m = Manifest::from_command("sh -c true").unwrap();
        let e = features(&plan, &m).unwrap_err().to_string();
        assert!(e.contains("--features") && e.contains("--manifest"), "{e}");
        assert!(features(&plan, &Manifest::reference()).is_ok());
    }
}
