//! The reference proxy with its deliberately broken behaviours (`--sabotage NAME`), for
//! `conformance demo`: an example, built only on request with the `sabotage` feature
//! (`cargo build -p proxy-under-test --example sabotaged-proxy --features sabotage`), never
//! part of a release build, and never the `proxy-under-test` binary itself.

fn main() -> std::process::ExitCode {
    proxy_under_test::cli_main(
        std::env::args_os()
            .map(|a| a.to_string_lossy().into())
            .collect(),
    )
}
