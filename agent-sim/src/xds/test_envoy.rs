//! Test support: where the tests find Envoy 1.40 (`ENVOY_BIN`, else the binary
//! `scripts/install-envoy.sh` puts under the workspace), and what they do without it: reported
//! ignored with the reason (the cfg `missing_envoy` from `build.rs`), or fail when
//! `CONFORMANCE_REQUIRE_ENVOY=1` (set by `.ci/run`) says Envoy must be there. Shared by the library's tests and (through `#[path]`) the integration tests.

use std::path::PathBuf;

/// The Envoy binary, or why there is none.
pub(crate) fn envoy_bin() -> Result<PathBuf, String> {
    let (path, from) = match std::env::var_os("ENVOY_BIN") {
        Some(p) => (PathBuf::from(p), "ENVOY_BIN"),
        None => (
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../.tools/envoy-1.40.0/envoy/_bin/envoy"),
            "run scripts/install-envoy.sh or set ENVOY_BIN",
        ),
    };
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!("no Envoy at {} ({from})", path.display()))
    }
}

/// The Envoy binary for test `test`. A test that calls this carries
/// `#[cfg_attr(missing_envoy, ignore = "needs Envoy ...")]` (the rule in `build/deps.rs`:
/// ignored with the reason where Envoy was missing when the crate was built, unless
/// `CONFORMANCE_REQUIRE_ENVOY=1`); when it runs without Envoy it fails naming what is missing,
/// never passes having checked nothing.
pub(crate) fn envoy(test: &str) -> PathBuf {
    envoy_bin().unwrap_or_else(|why| {
        panic!(
            "{test} needs Envoy 1.40: {why} (with CONFORMANCE_REQUIRE_ENVOY=1, or when Envoy \
             went away after the build, a missing Envoy is a failure)"
        )
    })
}
