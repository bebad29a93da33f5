//! `conformance demo --sabotage NAME` and `conformance list --sabotages`: see a failing report
//! without writing a broken proxy. The demo runs the reference proxy with one deliberately
//! broken behaviour against the scenarios that catch it. The broken proxy is a separate
//! program, the `sabotaged-proxy` example of proxy-under-test (built only with its test-only
//! `sabotage` feature); this binary and a release `proxy-under-test` never contain sabotage.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::out::outln;
use super::{DemoArgs, RunArgs};
use crate::error::Error;
use crate::manifest::Manifest;
use crate::plan::catalogue;

/// How to build the demo's broken proxy.
pub(super) const BUILD_DEMO_PROXY: &str =
    "cargo build -p proxy-under-test --example sabotaged-proxy --features sabotage";

/// Every sabotage the catalogue catches, with the scenarios that catch it.
pub(crate) fn sabotages() -> BTreeMap<String, Vec<String>> {
    let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for s in catalogue::builtin() {
        for c in &s.catches {
            by_name
                .entry(c.sabotage.clone())
                .or_default()
                .push(s.id.clone());
        }
    }
    by_name
}

/// `conformance list --sabotages`.
pub(crate) fn list_sabotages() {
    for (name, ids) in sabotages() {
        outln!("{name:<34} caught by {}", ids.join(", "));
    }
}

/// The demo's proxy program: `--proxy-bin`, else `sabotaged-proxy` in the `examples`
/// directory next to this binary (where cargo puts it).
fn proxy_bin(args: &DemoArgs) -> Result<PathBuf, Error> {
    if let Some(p) = &args.proxy_bin {
        return Ok(p.clone());
    }
    let exe = std::env::current_exe().map_err(|e| Error::io("find the conformance binary", e))?;
    let beside = exe
        .parent()
        .map(|d| d.join("examples").join("sabotaged-proxy"))
        .filter(|p| p.is_file());
    beside.ok_or_else(|| {
        Error::Usage(format!(
            "the demo needs the reference proxy built with its sabotages (a separate program, \
             never part of a release build): run `{BUILD_DEMO_PROXY}` in the source tree, or \
             pass --proxy-bin PATH"
        ))
    })
}

/// `conformance demo --sabotage NAME`.
pub(super) fn demo(args: &DemoArgs) -> Result<ExitCode, Error> {
    let all = sabotages();
    let Some(ids) = all.get(&args.sabotage) else {
        let names: Vec<&str> = all.keys().map(String::as_str).collect();
        let close = super::preflight::closest(&args.sabotage, names.iter().copied());
        return Err(Error::Usage(format!(
            "unknown sabotage {:?}; closest: {} (`conformance list --sabotages` lists them all)",
            args.sabotage,
            close.join(", ")
        )));
    };
    let bin = proxy_bin(args)?;
    let program = quote(&bin);
    let reference = Manifest::reference();
    outln!(
        "demo: the reference proxy with sabotage {:?} against {} (the scenario(s) that catch it); \
         expect failures",
        args.sabotage,
        ids.join(", ")
    );
    let run = RunArgs {
        proxy_cmd: Some(format!(
            "{program} -proxy-id {{proxy_id}} --sabotage {}",
            args.sabotage
        )),
        features: Some(reference.features.join(",")),
        scenario: ids.clone(),
        report_dir: args.report_dir.clone(),
        ..RunArgs::default()
    };
    super::run(&run)
}

/// A program path as one template word.
fn quote(p: &Path) -> String {
    let s = p.display().to_string();
    if s.contains([' ', '\'', '"']) {
        format!("'{}'", s.replace('\'', ""))
    } else {
        s
    }
}
