//! Tells the tests that need Envoy whether it is here (the rule in `build/deps.rs`): sets the
//! cfg `missing_envoy` when neither `ENVOY_BIN` nor the workspace's
//! `.tools/envoy-1.40.0/envoy/_bin/envoy` (`scripts/install-envoy.sh`) is a file and
//! `CONFORMANCE_REQUIRE_ENVOY=1` is not set; those tests are then reported ignored with the
//! reason. Rebuilt when either variable changes, or the installed binary appears or changes.

#[path = "build/deps.rs"]
mod deps;

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(missing_envoy)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=build/deps.rs");
    println!("cargo::rerun-if-env-changed=ENVOY_BIN");
    println!("cargo::rerun-if-env-changed=CONFORMANCE_REQUIRE_ENVOY");
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let tools = manifest.join("../.tools");
    // The directory where the installer puts it, once it exists (watching a missing path
    // would rebuild this crate every time).
    if tools.is_dir() {
        println!("cargo::rerun-if-changed={}", tools.display());
    }
    let found = match std::env::var_os("ENVOY_BIN") {
        Some(p) if PathBuf::from(&p).is_file() => Ok(()),
        Some(p) => Err(format!(
            "ENVOY_BIN={} is not a file",
            PathBuf::from(p).display()
        )),
        None if tools.join("envoy-1.40.0/envoy/_bin/envoy").is_file() => Ok(()),
        None => Err("no Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN".to_owned()),
    };
    let required = deps::required(std::env::var("CONFORMANCE_REQUIRE_ENVOY").ok().as_deref());
    match deps::gate(found, required) {
        deps::Gate::Run | deps::Gate::Fail(_) => {}
        // The tests' ignore reason says the same (an attribute's reason is a literal).
        deps::Gate::Ignore(_why) => println!("cargo::rustc-cfg=missing_envoy"),
    }
}
