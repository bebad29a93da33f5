//! Bounded capture of a child's stdout/stderr: the newest lines (by total bytes) with the time
//! they arrived, drained by a background task so the child never blocks on a full pipe.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::time::Instant;

/// Bytes of output kept per stream.
pub const DEFAULT_CAPACITY: usize = 64 * 1024;

/// The newest lines of one output stream.
#[derive(Debug)]
pub struct OutputRing {
    capacity: usize,
    started: Instant,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    lines: VecDeque<(u64, String)>,
    bytes: usize,
    dropped: u64,
}

impl OutputRing {
    /// An empty ring keeping about `capacity` bytes; times count from `started`.
    pub fn new(capacity: usize, started: Instant) -> Self {
        Self {
            capacity,
            started,
            inner: Mutex::default(),
        }
    }

    /// Adds one line (without its newline).
    pub fn push(&self, line: String) {
        let at = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut inner = self.inner.lock();
        inner.bytes += line.len();
        inner.lines.push_back((at, line));
        while inner.bytes > self.capacity && inner.lines.len() > 1 {
            if let Some((_, old)) = inner.lines.pop_front() {
                inner.bytes -= old.len();
                inner.dropped += 1;
            }
        }
    }

    /// The kept lines, each prefixed with its arrival time in ms; a first line says how many
    /// older lines were dropped.
    pub fn render(&self) -> String {
        let inner = self.inner.lock();
        let mut out = String::new();
        if inner.dropped > 0 {
            let _ = writeln!(out, "[... {} earlier lines dropped]", inner.dropped);
        }
        for (at, line) in &inner.lines {
            let _ = writeln!(out, "[{at:>6}ms] {line}");
        }
        out
    }

    /// Every kept line with its arrival time (ms since the process started).
    pub fn lines(&self) -> Vec<(u64, String)> {
        self.inner.lock().lines.iter().cloned().collect()
    }

    /// The last `n` lines, without times.
    pub fn tail(&self, n: usize) -> Vec<String> {
        let inner = self.inner.lock();
        let skip = inner.lines.len().saturating_sub(n);
        inner
            .lines
            .iter()
            .skip(skip)
            .map(|(_, l)| l.clone())
            .collect()
    }

    /// Whether nothing was captured.
    pub fn is_empty(&self) -> bool {
        self.inner.lock().lines.is_empty()
    }
}

/// Drains `stream` into `ring` until EOF (lossy UTF-8, one entry per line).
pub(crate) fn drain(
    stream: impl AsyncRead + Unpin + Send + 'static,
    ring: Arc<OutputRing>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut reader = BufReader::new(stream);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf);
                    ring.push(line.trim_end_matches(['\n', '\r']).to_owned());
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_lines_within_capacity() {
        let ring = OutputRing::new(10, Instant::now());
        for l in ["aaaa", "bbbb", "cccc", "dddd"] {
            ring.push(l.into());
        }
        assert_eq!(ring.tail(10), ["cccc", "dddd"]);
        let text = ring.render();
        assert!(
            text.starts_with("[... 2 earlier lines dropped]\n"),
            "{text}"
        );
        assert!(text.ends_with("ms] dddd\n"), "{text}");
    }

    #[test]
    fn a_single_huge_line_is_kept() {
        let ring = OutputRing::new(4, Instant::now());
        ring.push("x".repeat(100));
        assert_eq!(ring.tail(1)[0].len(), 100);
    }

    #[tokio::test]
    async fn drains_lines_lossily() {
        let ring = Arc::new(OutputRing::new(DEFAULT_CAPACITY, Instant::now()));
        let data: &[u8] = b"one\r\ntwo \xff\nthree";
        drain(data, ring.clone());
        for _ in 0..100 {
            if ring.tail(5).len() == 3 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert_eq!(ring.tail(5), ["one", "two \u{fffd}", "three"]);
    }
}
