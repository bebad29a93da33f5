//! Standard output that a closed pipe ends quietly: `conformance list | head -1` and a
//! `run`/`gate`/`merge` whose reader went away stop printing instead of panicking (what
//! `println!` does on `EPIPE`); the command still finishes (reports written) and keeps its
//! exit code.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a write to stdout failed (the reader is gone): nothing more is printed.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes one line to stdout; a failed write (a closed pipe) silences the rest of the output.
pub(crate) fn line(args: std::fmt::Arguments<'_>) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if out
        .write_fmt(args)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .is_err()
    {
        CLOSED.store(true, Ordering::Relaxed);
    }
}

/// `println!` that a closed stdout does not turn into a panic.
macro_rules! outln {
    () => {
        $crate::cli::out::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::cli::out::line(format_args!($($arg)*))
    };
}
pub(crate) use outln;
