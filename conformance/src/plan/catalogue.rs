//! Where scenarios come from and which ones a run plays: the built-in catalogue, extra files
//! (`--scenario-dir`), generator expansion, and selection by glob, skip glob and profile.
//!
//! The catalogue, its loader and the generator live in the `scenarios` crate; this module is
//! the harness's single door to them.

use std::path::Path;

use scenarios::{Profile, Scenario};

use super::Planned;
use crate::error::Error;

/// The built-in catalogue (every scenario of `scenarios::catalogue()`).
pub fn builtin() -> Vec<Scenario> {
    scenarios::catalogue()
}

/// Parses and validates one scenario file (TOML); errors name the file, line and field.
pub fn parse(path: &str, text: &str) -> Result<Scenario, Error> {
    scenarios::parse(path, text).map_err(scenario_error)
}

fn scenario_error(e: scenarios::ScenarioError) -> Error {
    Error::Scenario {
        path: match e.line {
            Some(l) => format!("{}:{l}", e.path),
            None => e.path.clone(),
        },
        message: match &e.field {
            Some(f) => format!("{f}: {}", e.message),
            None => e.message,
        },
    }
}

/// [`parse`] for a file's raw bytes (invalid UTF-8 is named with its line).
pub fn parse_bytes(path: &str, bytes: &[u8]) -> Result<Scenario, Error> {
    scenarios::parse_bytes(path, bytes).map_err(scenario_error)
}

/// Every `*.toml` file under `dir` (recursively, in path order).
pub fn load_dir(dir: &Path) -> Result<Vec<Scenario>, Error> {
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    files.sort();
    files
        .iter()
        .map(|f| {
            let bytes =
                std::fs::read(f).map_err(|e| Error::io(format!("read {}", f.display()), e))?;
            parse_bytes(&f.display().to_string(), &bytes)
        })
        .collect()
}

fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) -> Result<(), Error> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| Error::io(format!("read {}", dir.display()), e))?;
    for entry in entries {
        let path = entry
            .map_err(|e| Error::io(format!("read {}", dir.display()), e))?
            .path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "toml") {
            out.push(path);
        }
    }
    Ok(())
}

/// Turns a generated (property-based) scenario into concrete steps with `seed`.
pub fn expand(s: &Scenario, seed: u64) -> Result<Scenario, Error> {
    Ok(if s.generate.is_some() {
        scenarios::expand(s, seed)
    } else {
        s.clone()
    })
}

/// `*` (any run of characters) and `?` (one character) glob matching.
pub fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(c) if *c == '?' || *c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Which scenarios a run plays.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Only ids matching one of these globs (all when empty).
    pub include: Vec<String>,
    /// Ids matching one of these are reported as skipped.
    pub skip: Vec<String>,
    /// Only these profiles (all when empty).
    pub profiles: Vec<Profile>,
}

/// Checks ids are unique.
pub fn check_unique(all: &[Scenario]) -> Result<(), Error> {
    let mut seen = std::collections::BTreeSet::new();
    for s in all {
        if !seen.insert(s.id.as_str()) {
            return Err(Error::Scenario {
                path: s.id.clone(),
                message: "two scenarios have this id".into(),
            });
        }
    }
    Ok(())
}

/// The plan: selected scenarios in catalogue order, skipped ones marked.
pub fn select(all: Vec<Scenario>, sel: &Selection) -> Vec<Planned> {
    all.into_iter()
        .filter(|s| sel.profiles.is_empty() || sel.profiles.contains(&s.profile))
        .filter(|s| sel.include.is_empty() || sel.include.iter().any(|g| glob(g, &s.id)))
        .map(|s| {
            if sel.skip.iter().any(|g| glob(g, &s.id)) {
                Planned::Skip(s)
            } else {
                Planned::Run(s)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
