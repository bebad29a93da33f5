//! `conformance reference-proxy ARGS...`: the bundled reference proxy (`proxy-under-test`),
//! run in-process through its own command-line entry point, so `conformance run` needs no second
//! binary. Its flags, environment handling and SIGTERM/Ctrl-C behaviour are the proxy's own.
//! (`--sabotage` exists only in test builds, where the `sabotage` feature is on.)

use std::process::ExitCode;

/// Runs the reference proxy with `args` (its flags, e.g. `-proxy-id db-sidecar-proxy`).
pub fn reference_proxy(args: Vec<String>) -> ExitCode {
    let argv: Vec<String> = std::iter::once("proxy-under-test".to_owned())
        .chain(args)
        .collect();
    match tokio::runtime::Runtime::new() {
        Ok(rt) => rt.block_on(proxy_under_test::cli_main(argv)),
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            ExitCode::from(1)
        }
    }
}
