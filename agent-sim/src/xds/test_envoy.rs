//! Test support: where the tests find Envoy 1.40 (`ENVOY_BIN`, else the binary
//! `scripts/install-envoy.sh` puts under the workspace), and what they do without it: skip with
//! a printed reason, or fail when `CONFORMANCE_REQUIRE_ENVOY=1` (set by `.ci/run`) says Envoy
//! must be there. Shared by the library's tests and (through `#[path]`) the integration tests.

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

/// The Envoy binary for test `test`; `None` (after printing why) when it is absent and not
/// required. Panics when it is absent and `CONFORMANCE_REQUIRE_ENVOY=1`.
pub(crate) fn envoy_or_skip(test: &str) -> Option<PathBuf> {
    match envoy_bin() {
        Ok(p) => Some(p),
        Err(why) if std::env::var_os("CONFORMANCE_REQUIRE_ENVOY").is_some_and(|v| v == "1") => {
            panic!("{test}: Envoy is required (CONFORMANCE_REQUIRE_ENVOY=1): {why}")
        }
        Err(why) => {
            eprintln!("SKIPPED {test}: {why}");
            None
        }
    }
}
