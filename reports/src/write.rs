//! `write_all`: the only IO of the crate, writing every rendering into a directory it is handed.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::ReportError;
use crate::model::Report;
use crate::{to_html, to_json, to_junit, to_markdown};

/// File names `write_all` writes, in order.
pub const REPORT_FILES: [&str; 4] = ["report.json", "junit.xml", "report.md", "report.html"];

/// Writes `report.json`, `junit.xml`, `report.md` and `report.html` into `dir` (created if
/// missing; existing files are replaced) and returns their paths in that order.
pub fn write_all(report: &Report, dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    fs::create_dir_all(dir).map_err(|source| ReportError::Io {
        action: "create directory",
        path: dir.to_owned(),
        source,
    })?;
    let renderings = [
        to_json(report),
        to_junit(report),
        to_markdown(report),
        to_html(report),
    ];
    let mut written = Vec::with_capacity(REPORT_FILES.len());
    for (name, content) in REPORT_FILES.into_iter().zip(renderings) {
        let path = dir.join(name);
        fs::write(&path, content).map_err(|source| ReportError::Io {
            action: "write",
            path: path.clone(),
            source,
        })?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::sample_report;

    #[test]
    fn writes_every_rendering_into_a_new_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("nested/reports");
        let report = sample_report();
        let paths = write_all(&report, &dir).unwrap();
        let names: Vec<_> = paths
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap())
            .collect();
        assert_eq!(names, REPORT_FILES);
        assert_eq!(fs::read_to_string(&paths[0]).unwrap(), to_json(&report));
        assert_eq!(fs::read_to_string(&paths[1]).unwrap(), to_junit(&report));
        assert_eq!(fs::read_to_string(&paths[2]).unwrap(), to_markdown(&report));
        assert_eq!(fs::read_to_string(&paths[3]).unwrap(), to_html(&report));
        // Writing again replaces the files.
        write_all(&report, &dir).unwrap();
    }

    #[test]
    fn a_file_in_the_way_is_an_io_error() {
        let tmp = tempfile::tempdir().unwrap();
        let blocker = tmp.path().join("blocker");
        fs::write(&blocker, "").unwrap();
        let err = write_all(&sample_report(), &blocker.join("sub")).unwrap_err();
        assert_eq!(err.kind(), "io");
        assert!(
            err.to_string().starts_with("cannot create directory "),
            "{err}"
        );
    }
}
