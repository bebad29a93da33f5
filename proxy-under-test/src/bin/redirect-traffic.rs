//! `redirect-traffic` binary: [`proxy_under_test::redirect::cli_main`] (installs the iptables
//! rules of transparent proxying, see the module docs).

fn main() -> std::process::ExitCode {
    let status = proxy_under_test::redirect::cli_main(std::env::args_os());
    std::process::ExitCode::from(u8::try_from(status).unwrap_or(1))
}
