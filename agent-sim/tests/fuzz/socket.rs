//! Raw bytes over a real loopback socket: hyper's parser must turn garbage, truncated and
//! oversized requests into a 4xx or a closed connection, every connection must end once the
//! client is done, no 5xx outside the documented set, and no socket of the sim's may stay open
//! afterwards (counted from `/proc/self/fd` and `/proc/net/tcp`).

use std::collections::HashSet;
use std::time::Duration;

use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::strategies::{path, query};
use super::support::{Answer, allowed_5xx, builder, config, runtime, seed};

/// Real time a connection may take to end after the client half-closes.
const END_BOUND: Duration = Duration::from_secs(20);

/// Raw request bytes: well-formed ones with fuzzed parts, and every kind of broken one.
fn well_formed() -> impl Strategy<Value = Vec<u8>> {
    let method = select(vec![
        "GET", "PUT", "POST", "DELETE", "get", "G\0T", "", "BREW",
    ]);
    let version = select(vec![
        "HTTP/1.1",
        "HTTP/1.0",
        "HTTP/9.9",
        "HTTP/2.0",
        "",
        "HTTP/1.1 x",
    ]);
    (
        method,
        path(),
        query(),
        version,
        prop::collection::vec(any::<u8>(), 0..64),
    )
        .prop_map(|(m, p, q, v, body)| {
            // No `index` without a short `wait`: a blocking query is an answer that takes time.
            let q = if q.contains("index=") {
                format!("{q}&wait=5ms")
            } else {
                q
            };
            let mut r = format!("{m} {p}?{q} {v}\r\nHost: sim\r\nConnection: close\r\n");
            r.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
            let mut r = r.into_bytes();
            r.extend(body);
            r
        })
}

fn raw_request() -> impl Strategy<Value = Vec<u8>> {
    let broken = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..2048),
        Just(b"GET /v1/agent/self HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\n".to_vec()),
        Just(b"PUT /v1/agent/service/register HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".to_vec()),
        Just(b"PUT /v1/agent/service/register HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n{".to_vec()),
        Just(b"PUT /v1/agent/service/register HTTP/1.1\r\nContent-Length: -1\r\n\r\n".to_vec()),
        Just(b"GET /v1/agent/self HTTP/1.1\nHost: x\n\n".to_vec()),
        Just(b"GET /v1/agent/self HTTP/1.1\r\nHost: x\r\n bad continuation\r\n\r\n".to_vec()),
        Just(b"GET /v1/agent/self\r\n\r\n".to_vec()),
        Just(b"\r\n\r\n\r\n".to_vec()),
        Just(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec()),
        (1usize..300).prop_map(|n| {
            let mut r = b"GET /v1/agent/self HTTP/1.1\r\n".to_vec();
            for i in 0..n {
                r.extend(format!("X-H{i}: v\r\n").into_bytes());
            }
            r.extend(b"\r\n");
            r
        }),
        (1usize..1_500_000).prop_map(|n| {
            let mut r = b"GET /v1/agent/self HTTP/1.1\r\nX-Big: ".to_vec();
            r.extend(std::iter::repeat_n(b'a', n));
            r.extend(b"\r\n\r\n");
            r
        }),
    ];
    prop_oneof![
        3 => well_formed(),
        // Truncated somewhere.
        1 => (well_formed(), any::<prop::sample::Index>()).prop_map(|(r, i)| {
            let cut = i.index(r.len().max(1));
            r[..cut].to_vec()
        }),
        3 => broken,
    ]
}

/// What one connection got back.
async fn exchange(addr: std::net::SocketAddr, bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut s = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    // The server may answer (and close) before it read everything: a failed write is fine, and
    // so is one the server stopped reading (bounded): what it answers is judged below.
    let _ = tokio::time::timeout(END_BOUND, s.write_all(bytes)).await;
    let _ = s.shutdown().await;
    let mut out = Vec::new();
    match tokio::time::timeout(END_BOUND, s.read_to_end(&mut out)).await {
        Ok(_) => Ok(out),
        Err(_) => Err(format!(
            "connection still open {END_BOUND:?} after the client finished; got {:?}",
            String::from_utf8_lossy(&out[..out.len().min(200)])
        )),
    }
}

/// Checks a raw answer: nothing, or HTTP/1.x responses with no 5xx outside the allowed set.
fn check_raw(sent: &[u8], got: &[u8]) -> Result<(), String> {
    if got.is_empty() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(got);
    let sent = String::from_utf8_lossy(&sent[..sent.len().min(200)]);
    let Some(rest) = text.strip_prefix("HTTP/1.") else {
        return Err(format!("not an HTTP answer to {sent:?}: {text:?}"));
    };
    let status: u16 = rest
        .get(2..5)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status in {text:?}"))?;
    if status >= 500 {
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let content_type = head.lines().find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-type: ")
                .map(str::to_owned)
        });
        let a = Answer {
            status,
            index: None,
            content_type,
            text: body.to_owned(),
        };
        let mut line = sent.split_whitespace();
        let (method, path) = (
            line.next().unwrap_or_default(),
            line.next().unwrap_or_default(),
        );
        if !allowed_5xx(method, path.split('?').next().unwrap_or_default(), &a) {
            return Err(format!("{sent:?} answered {status}: {text:?}"));
        }
    }
    Ok(())
}

/// Socket inodes in this process whose local or remote port is `port` (the listener excluded).
pub(crate) fn open_sockets(port: u16) -> usize {
    let mut ours = HashSet::new();
    if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
        for e in dir.flatten() {
            if let Ok(link) = std::fs::read_link(e.path()) {
                let link = link.to_string_lossy().into_owned();
                if let Some(inode) = link
                    .strip_prefix("socket:[")
                    .and_then(|l| l.strip_suffix(']'))
                {
                    ours.insert(inode.to_owned());
                }
            }
        }
    }
    let mut n = 0;
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 10 || f[3] == "0A" {
                continue; // short line, or a listener
            }
            let port_of = |a: &str| {
                a.rsplit(':')
                    .next()
                    .and_then(|p| u16::from_str_radix(p, 16).ok())
            };
            let touches = port_of(f[1]) == Some(port) || port_of(f[2]) == Some(port);
            if touches && ours.contains(f[9]) {
                n += 1;
            }
        }
    }
    n
}

/// Waits (polling, bounded) until no socket of the sim's port is open in this process.
pub(crate) async fn sockets_closed(port: u16) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + END_BOUND;
    loop {
        let n = open_sockets(port);
        if n == 0 {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!(
                "{n} sockets of port {port} still open after {END_BOUND:?}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

proptest! {
    #![proptest_config(config(50, "proptest-regressions/fuzz/socket.txt"))]

    #[test]
    fn raw_bytes_get_an_answer_or_a_close(
        acl in any::<bool>(),
        conns in prop::collection::vec(raw_request(), 1..6),
    ) {
        let result: Result<(), TestCaseError> = runtime().block_on(async {
            let sim = builder(acl).start().await.expect("sim starts");
            seed(sim.control(), acl);
            let addr = sim.addr();
            let mut tasks = Vec::new();
            for bytes in conns {
                tasks.push(tokio::spawn(async move {
                    let got = exchange(addr, &bytes).await?;
                    check_raw(&bytes, &got)
                }));
            }
            for t in tasks {
                t.await.expect("client task").map_err(TestCaseError::fail)?;
            }
            sockets_closed(addr.port()).await.map_err(TestCaseError::fail)?;
            // The sim still answers a plain request afterwards.
            let got = exchange(addr, b"GET /v1/agent/self HTTP/1.1\r\nHost: x\r\nX-Consul-Token: fuzz-root\r\nConnection: close\r\n\r\n")
                .await
                .map_err(TestCaseError::fail)?;
            prop_assert!(got.starts_with(b"HTTP/1.1 200"), "{:?}", String::from_utf8_lossy(&got));
            sim.shutdown().await;
            Ok(())
        });
        result?;
    }
}

/// A body past the limit (2 MiB, axum's default for every body-reading endpoint) is refused with
/// 413 while it streams, without the sim reading the rest: memory stays bounded. Consul itself
/// reads registration bodies without a limit; the sim's limit is far above any real one.
#[test]
fn an_endless_body_is_refused_with_413() {
    runtime().block_on(async {
        let sim = builder(false).start().await.expect("sim starts");
        let addr = sim.addr();
        let s = TcpStream::connect(addr).await.expect("connect");
        let (mut r, mut w) = s.into_split();
        // Read while writing: the answer comes before the body ends.
        let reader = tokio::spawn(async move {
            let mut out = Vec::new();
            let mut buf = [0u8; 4096];
            while let Ok(Ok(n)) = tokio::time::timeout(END_BOUND, r.read(&mut buf)).await {
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&buf[..n]);
            }
            out
        });
        w.write_all(b"PUT /v1/agent/service/register HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000000\r\n\r\n[")
            .await
            .expect("head");
        let chunk = vec![b'['; 64 * 1024];
        let mut sent = 0usize;
        // Keep sending until the server stops reading (it answered and closed) or 8 MiB went.
        while sent < 8 << 20 {
            if w.write_all(&chunk).await.is_err() {
                break;
            }
            sent += chunk.len();
        }
        drop(w);
        let out = reader.await.expect("reader");
        let text = String::from_utf8_lossy(&out);
        assert!(text.starts_with("HTTP/1.1 413"), "{text}");
        sockets_closed(addr.port()).await.expect("closed");
        sim.shutdown().await;
    });
}

/// The socket count the properties rely on sees open connections (both ends are in this
/// process) and sees them go.
#[test]
fn the_socket_count_sees_connections() {
    runtime().block_on(async {
        let sim = builder(false).start().await.expect("sim starts");
        let port = sim.addr().port();
        let idle = TcpStream::connect(sim.addr()).await.expect("connect");
        let deadline = tokio::time::Instant::now() + END_BOUND;
        // Our end at once; the sim's end once it accepted.
        while open_sockets(port) < 2 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "count stuck at {}",
                open_sockets(port)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        drop(idle);
        sockets_closed(port).await.expect("closed");
        sim.shutdown().await;
    });
}

/// An injected error with an informational status (1xx, never a final status on the wire) still
/// reaches the client as an answer and the connection ends; other statuses are sent as given.
#[test]
fn injected_errors_with_any_status_reach_the_wire() {
    runtime().block_on(async {
        let sim = builder(false).start().await.expect("sim starts");
        let addr = sim.addr();
        for status in [100u16, 101, 103, 199, 204, 304, 418, 500, 599, 999] {
            let fault = agent_sim::faults::Fault::Errors {
                status,
                body: "injected".into(),
                path_prefix: None,
            };
            let guard = sim.control().inject(fault);
            let got = exchange(
                addr,
                b"GET /v1/agent/self HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            )
            .await
            .expect("ended");
            let text = String::from_utf8_lossy(&got);
            assert!(text.starts_with("HTTP/1.1 "), "{status}: {text:?}");
            drop(guard);
        }
        sockets_closed(addr.port()).await.expect("closed");
        sim.shutdown().await;
    });
}
