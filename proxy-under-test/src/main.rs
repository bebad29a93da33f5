//! `proxy-under-test` binary: [`proxy_under_test::cli_main`], which builds its own runtime.

fn main() -> std::process::ExitCode {
    proxy_under_test::cli_main(
        std::env::args_os()
            .map(|a| a.to_string_lossy().into())
            .collect(),
    )
}
