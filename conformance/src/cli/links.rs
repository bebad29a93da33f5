//! Fills in each scenario's links before the report is written: its catalogue file (relative
//! to the report's directory where this machine has the source tree the harness was built from,
//! else the file's path in the repository) and the Consul documentation it tests.

use std::path::{Component, Path, PathBuf};

use reports::Report;

use crate::plan::links::{catalogue_path, docs};

/// The source tree this binary was built from (its `scenarios/` holds the catalogue files).
fn source_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Sets `catalogue` and `docs` on every scenario of `report` that has none yet.
pub(super) fn annotate(report: &mut Report, report_dir: &Path) {
    let root = source_root();
    for s in &mut report.scenarios {
        if s.docs.is_empty() {
            s.docs = docs(&s.features);
        }
        if s.catalogue.is_some() {
            continue;
        }
        s.catalogue = catalogue_path(&s.id).map(|repo_path| {
            let file = root.join(&repo_path);
            match (file.canonicalize(), absolute(report_dir)) {
                (Ok(file), Some(dir)) => relative(&dir, &file),
                _ => repo_path,
            }
        });
    }
}

/// `dir` as an absolute, normalized path (it need not exist yet).
fn absolute(dir: &Path) -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok()?;
    let joined = cwd.join(dir);
    // Canonicalize the longest existing ancestor, then append the rest.
    let mut existing = joined.as_path();
    let mut rest = Vec::new();
    while existing.canonicalize().is_err() {
        rest.push(existing.file_name()?.to_owned());
        existing = existing.parent()?;
    }
    let mut out = existing.canonicalize().ok()?;
    for part in rest.into_iter().rev() {
        out.push(part);
    }
    Some(out)
}

/// The path from directory `from` to file `to` (both absolute and normalized), `/`-separated.
fn relative(from: &Path, to: &Path) -> String {
    let a: Vec<Component<'_>> = from.components().collect();
    let b: Vec<Component<'_>> = to.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = vec!["..".to_owned(); a.len() - common];
    parts.extend(
        b[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_climb_then_descend() {
        assert_eq!(
            relative(
                Path::new("/w/repo/conformance-report"),
                Path::new("/w/repo/scenarios/catalogue/core/x.toml")
            ),
            "../scenarios/catalogue/core/x.toml"
        );
        assert_eq!(
            relative(Path::new("/a/b"), Path::new("/a/b/c.toml")),
            "c.toml"
        );
        assert_eq!(
            relative(Path::new("/x/y"), Path::new("/a/c.toml")),
            "../../a/c.toml"
        );
    }

    #[test]
    fn built_in_scenarios_link_their_file_from_the_report_directory() {
        let mut report = reports::fixture::sample_report();
        let dir = tempfile::tempdir().unwrap();
        annotate(&mut report, dir.path());
        let s = &report.scenarios[0];
        assert_eq!(s.id, "l4-allow-deny");
        // The fixture already links it; a scenario without a link gets one that resolves.
        let mut bare = reports::ScenarioResult::new(
            "intention-change",
            "d",
            reports::Profile::Core,
            vec!["l4".into()],
        );
        bare.catalogue = None;
        report.scenarios.push(bare);
        annotate(&mut report, dir.path());
        let s = report.scenarios.last().unwrap();
        let link = s.catalogue.clone().unwrap();
        assert!(
            link.ends_with("scenarios/catalogue/core/intention-change.toml"),
            "{link}"
        );
        assert!(dir.path().join(&link).is_file(), "{link} does not resolve");
        assert_eq!(
            s.docs[1],
            "https://developer.hashicorp.com/consul/docs/connect/intentions"
        );
    }
}
