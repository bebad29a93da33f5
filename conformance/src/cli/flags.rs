//! What the flags of `conformance run` and `conformance list` describe: the proxy's manifest
//! (`--manifest`, `--proxy-cmd`, `--features`, `--bound`, `--xds-tls-mode`, `--proxy-image`),
//! the named timeouts (`--timeout`), every known scenario (`--scenario-dir`) and the profiles
//! (`--profile`).

use scenarios::{Profile, Scenario, Timeouts};

use super::{RunArgs, parse_profile};
use crate::error::Error;
use crate::manifest::Manifest;
use crate::plan::catalogue;

/// The manifest the flags describe.
pub(crate) fn manifest(args: &RunArgs) -> Result<Manifest, Error> {
    let mut m = match (&args.manifest, &args.proxy_cmd) {
        (Some(path), cmd) => {
            let bytes = std::fs::read(path)
                .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
            let mut m = Manifest::parse_bytes(path, &bytes)?;
            if let Some(cmd) = cmd {
                crate::template::check(cmd)?;
                m.set_command(cmd);
            }
            m
        }
        (None, Some(cmd)) => Manifest::from_command(cmd)?,
        (None, None) => Manifest::reference(),
    };
    if let Some(f) = &args.features {
        m.set_features(f)?;
    }
    for b in &args.bound {
        m.set_bound(b)?;
    }
    if let Some(mode) = &args.xds_tls_mode {
        m.set_xds_tls_mode(mode)?;
    }
    if let Some(image) = &args.proxy_image {
        m.set_image(image)?;
    }
    m.validate("flags")?;
    Ok(m)
}

/// The named timeouts with `--timeout name=duration` overrides.
pub(crate) fn timeouts(overrides: &[String]) -> Result<Timeouts, Error> {
    let mut t = Timeouts::default();
    for o in overrides {
        let (name, value) = o
            .split_once('=')
            .ok_or_else(|| Error::Usage(format!("--timeout {o:?}: expected name=duration")))?;
        let d = agent_sim::duration::GoDuration::parse(value.trim())
            .map_err(|e| Error::Usage(format!("--timeout {name}: {e}")))?;
        t.set(name.trim(), d.to_std()).map_err(Error::Usage)?;
    }
    Ok(t)
}

/// Every known scenario: the catalogue plus `--scenario-dir` files.
pub(super) fn scenarios(dirs: &[std::path::PathBuf]) -> Result<Vec<Scenario>, Error> {
    let mut all = catalogue::builtin();
    for d in dirs {
        all.extend(catalogue::load_dir(d)?);
    }
    catalogue::check_unique(&all)?;
    Ok(all)
}

pub(super) fn profiles(names: &[String]) -> Result<Vec<Profile>, Error> {
    names
        .iter()
        .filter(|n| !n.trim().is_empty())
        .map(|n| parse_profile(n))
        .collect()
}

pub(super) fn report_profile(p: Profile) -> reports::Profile {
    match p {
        Profile::Core => reports::Profile::Core,
        Profile::L7 => reports::Profile::L7,
        Profile::Extended => reports::Profile::Extended,
        Profile::Transparent => reports::Profile::Transparent,
        Profile::L7Traffic => reports::Profile::L7Traffic,
        Profile::Security => reports::Profile::Security,
    }
}
