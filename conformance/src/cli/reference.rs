//! `conformance reference-proxy ARGS...` and `conformance redirect-traffic ARGS...`: the
//! bundled reference proxy (`proxy-under-test`) and its redirect step, run in-process through
//! their own command-line entry points, so `conformance run` needs no second binary. Flags,
//! environment handling and signals are theirs. (`--sabotage` exists only in test builds, where
//! the `sabotage` feature is on.)

use std::process::ExitCode;

/// Runs the reference proxy with `args` (its flags, e.g. `-proxy-id db-sidecar-proxy`).
pub fn reference_proxy(args: Vec<String>) -> ExitCode {
    let argv: Vec<String> = std::iter::once("proxy-under-test".to_owned())
        .chain(args)
        .collect();
    proxy_under_test::cli_main(argv)
}

/// Runs `redirect-traffic` with `args` (its flags, e.g. `-proxy-id db-sidecar-proxy
/// -proxy-uid 5995`).
pub fn redirect_traffic(args: Vec<String>) -> ExitCode {
    let argv = std::iter::once("redirect-traffic".to_owned())
        .chain(args)
        .map(std::ffi::OsString::from);
    let code = proxy_under_test::redirect::cli_main(argv);
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
