//! `conformance dial ADDR LINE` (hidden): connects to ADDR, sends LINE and a newline, prints the
//! first line answered. The harness runs it as another UID (a transparent scenario's excluded
//! UID) to make a dial that is not the harness's own.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::ExitCode;
use std::time::Duration;

/// How long the connect and the answer may each take.
const LIMIT: Duration = Duration::from_secs(5);

/// Runs one exchange; the answer on stdout (exit 0), or what went wrong on stderr (exit 1).
pub(super) fn dial(addr: SocketAddr, line: &str) -> ExitCode {
    match exchange(addr, line) {
        Ok(answer) => {
            println!("{answer}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn exchange(addr: SocketAddr, line: &str) -> Result<String, String> {
    let mut s =
        TcpStream::connect_timeout(&addr, LIMIT).map_err(|e| format!("connect failed: {e}"))?;
    s.set_read_timeout(Some(LIMIT))
        .map_err(|e| format!("set a read timeout: {e}"))?;
    s.write_all(format!("{line}\n").as_bytes())
        .map_err(|e| format!("write failed: {e}"))?;
    let mut answer = String::new();
    match BufReader::new(s).read_line(&mut answer) {
        Ok(0) => Err("closed without an answer".into()),
        Ok(_) => Ok(answer.trim().to_owned()),
        Err(e) => Err(format!("read failed: {e}")),
    }
}
