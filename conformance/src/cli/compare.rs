//! `conformance compare REPORT.json... -o DIR`: several proxies side by side. Writes
//! `compare.md` and `compare.html` (scenarios × proxies, each cell linking to the scenario's
//! section in the `report.html` beside that `report.json`).

use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use super::CompareArgs;
use super::out::outln;
use crate::error::Error;

/// `conformance compare`.
pub(super) fn compare(args: &CompareArgs) -> Result<ExitCode, Error> {
    let mut columns = Vec::new();
    for path in &args.reports {
        let report = super::merge::read_report(path)?;
        let page = path.with_file_name("report.html");
        let html = page.is_file().then(|| relative(&page, &args.out));
        if let Some(dir) = &args.slim {
            let name = path
                .parent()
                .and_then(Path::file_name)
                .map_or_else(|| "report".to_owned(), |n| n.to_string_lossy().into_owned());
            write(
                &dir.join(format!("{name}.json")),
                &reports::to_json(&reports::slim(&report)),
            )?;
        }
        columns.push(reports::Column { report, html });
    }
    let markdown = reports::compare_markdown(&columns, args.catalogue.as_deref());
    if let Some(file) = &args.markdown {
        return write(file, &markdown).map(|()| ExitCode::SUCCESS);
    }
    write(&args.out.join("compare.md"), &markdown)?;
    write(
        &args.out.join("compare.html"),
        &reports::compare_html(&columns),
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Writes `text` to `path` (its directory created) and says so.
fn write(path: &Path, text: &str) -> Result<(), Error> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("create {}", dir.display()), e))?;
    }
    std::fs::write(path, text).map_err(|e| Error::io(format!("write {}", path.display()), e))?;
    outln!("wrote {}", path.display());
    Ok(())
}

/// `target` as a link from a page in `dir` (relative when both resolve, else absolute).
fn relative(target: &Path, dir: &Path) -> String {
    let (Ok(t), Ok(d)) = (target.canonicalize(), dir.canonicalize()) else {
        return target.display().to_string();
    };
    let t: Vec<Component<'_>> = t.components().collect();
    let d: Vec<Component<'_>> = d.components().collect();
    let common = t.iter().zip(&d).take_while(|(a, b)| a == b).count();
    let mut rel = PathBuf::new();
    for _ in common..d.len() {
        rel.push("..");
    }
    for c in &t[common..] {
        rel.push(c);
    }
    rel.display().to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn links_are_relative_to_the_page() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("runs/envoy");
        let out = tmp.path().join("docs");
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(a.join("report.html"), "").unwrap();
        assert_eq!(
            super::relative(&a.join("report.html"), &out),
            "../runs/envoy/report.html"
        );
    }
}
