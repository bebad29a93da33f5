//! The abuse pass of the L7 listener's request normalization, through real mTLS to the proxy
//! binary: request lines built from the bypass shapes (letters %-encoded in either hex case, `.`
//! and `..` in every spelling, also with `;` parameters, duplicate slashes, escaped slashes
//! `%2F`/`%5C`) and header names with underscores and in mixed case, sent as raw bytes against
//! an L7 intention that denies `PathPrefix /admin` and requests carrying `x_role` or `x-debug`.
//! Under Consul's defaults and under two `mesh` entries, a model written here independently of
//! the proxy's normalizer says what Envoy does: no request that normalizes into `/admin` reaches
//! the app, what reaches it is exactly the normalized path, and `HeadersWithUnderscoresAction`
//! decides what becomes of `x_role`. Proptest-generated (`PROPTEST_CASES` for the long pass).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use bytes::Bytes;
use http::Response;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::child::ProxyChild;
use super::raw::{config, runtime};
use crate::e2e::support::*;

/// One path segment as the generator spells it; the model reads its meaning.
#[derive(Debug, Clone)]
enum Seg {
    /// A name, each letter possibly %-encoded (`raw`), meaning `name`.
    Name { raw: String, name: String },
    /// `.`, `%2e`, `.;p`.
    Dot(&'static str),
    /// `..`, `%2e%2E`, `.%2e`, `..;x`.
    Up(&'static str),
    /// Nothing between two slashes.
    Empty,
    /// `a%2Fb` (or `%2f`, `%5C`, `%5c`): an escaped slash between two names.
    Escaped(&'static str),
}

/// The three `mesh` settings exercised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mesh {
    /// No entry: normalize, keep escaped slashes, no merging, underscores allowed.
    Defaults,
    /// MergeSlashes, UNESCAPE_AND_FORWARD, DROP_HEADER.
    Lenient,
    /// REJECT_REQUEST for escaped slashes and for underscores.
    Strict,
}

impl Mesh {
    fn entry(self) -> Option<Value> {
        let rn = match self {
            Self::Defaults => return None,
            Self::Lenient => json!({"MergeSlashes": true,
                "PathWithEscapedSlashesAction": "UNESCAPE_AND_FORWARD",
                "HeadersWithUnderscoresAction": "DROP_HEADER"}),
            Self::Strict => json!({"PathWithEscapedSlashesAction": "REJECT_REQUEST",
                "HeadersWithUnderscoresAction": "REJECT_REQUEST"}),
        };
        Some(json!({"Kind": "mesh", "HTTP": {"Incoming": {"RequestNormalization": rn}}}))
    }
}

fn name() -> impl Strategy<Value = Seg> {
    let word = prop_oneof![
        4 => Just("admin"),
        1 => Just("Admin"),
        2 => Just("x"),
        1 => Just("a_b"),
    ];
    (
        word,
        prop::collection::vec((any::<bool>(), any::<bool>()), 5),
    )
        .prop_map(|(w, enc)| {
            let mut raw = String::new();
            for (c, (escape, upper)) in w.chars().zip(enc) {
                if escape {
                    let hex = format!("{:02x}", c as u32);
                    raw.push('%');
                    raw.push_str(&if upper { hex.to_uppercase() } else { hex });
                } else {
                    raw.push(c);
                }
            }
            Seg::Name {
                raw,
                name: w.to_owned(),
            }
        })
}

fn segment() -> impl Strategy<Value = Seg> {
    prop_oneof![
        5 => name(),
        2 => prop::sample::select(vec![".", "%2e", "%2E", ".;", ".;p=1"]).prop_map(Seg::Dot),
        3 => prop::sample::select(vec!["..", "%2e%2E", ".%2e", "%2E.", "..;", "..;x"]).prop_map(Seg::Up),
        2 => Just(Seg::Empty),
        2 => prop::sample::select(vec!["a%2Fb", "a%2fb", "a%5Cb", "a%5cb"]).prop_map(Seg::Escaped),
    ]
}

/// Header lines: `x_role` (underscore, any case), `x-debug` (mixed case), harmless ones.
fn headers() -> impl Strategy<Value = Vec<&'static str>> {
    prop::collection::vec(
        prop::sample::select(vec![
            "x_role: admin",
            "X_Role: admin",
            "x-DeBuG: 1",
            "X-Debug: 1",
            "x-trace: 1",
            "Accept: */*",
        ]),
        0..3,
    )
}

/// What Envoy does with `segs` and `headers` under `mesh` (the model): the status, and for a
/// 200 the path and whether `x_role` reaches the app.
fn model(mesh: Mesh, segs: &[Seg], headers: &[&str]) -> (u16, String, bool) {
    let underscore = headers
        .iter()
        .any(|h| h.split(':').next().is_some_and(|n| n.contains('_')));
    let escaped = segs.iter().any(|s| matches!(s, Seg::Escaped(_)));
    if mesh == Mesh::Strict && (underscore || escaped) {
        return (400, String::new(), false);
    }
    // Logical segments: `None` = a dot segment to resolve (Some(true) = up).
    let mut logical: Vec<Result<String, bool>> = Vec::new();
    for s in segs {
        match s {
            Seg::Name { name, .. } => logical.push(Ok(name.clone())),
            Seg::Dot(_) => logical.push(Err(false)),
            Seg::Up(_) => logical.push(Err(true)),
            Seg::Empty => logical.push(Ok(String::new())),
            Seg::Escaped(raw) if mesh == Mesh::Lenient => {
                // Unescaped first: `%2F` is a slash, `%5C` a backslash, which normalization
                // then reads as a slash.
                logical.push(Ok("a".into()));
                logical.push(Ok(raw[4..].into()));
            }
            Seg::Escaped(raw) => logical.push(Ok((*raw).into())),
        }
    }
    let mut stack: Vec<String> = Vec::new();
    let mut trailing = false;
    for l in logical {
        trailing = l.is_err();
        match l {
            Ok(s) => stack.push(s),
            Err(true) => {
                stack.pop();
            }
            Err(false) => {}
        }
    }
    let mut path = format!("/{}", stack.join("/"));
    if trailing && !stack.is_empty() {
        path.push('/');
    }
    if mesh == Mesh::Lenient {
        let lead = "/";
        let tail = if path.len() > 1 && path.ends_with('/') {
            "/"
        } else {
            ""
        };
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        path = format!("{lead}{}{tail}", parts.join("/"));
    }
    let role_kept = underscore && mesh == Mesh::Defaults;
    let debug = headers
        .iter()
        .any(|h| h.to_ascii_lowercase().starts_with("x-debug:"));
    if path.starts_with("/admin") || role_kept || debug {
        return (403, path, false);
    }
    (200, path, role_kept)
}

/// An HTTP/1.1 app answering with the path it received and its header names, one per line.
async fn recording_app() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = l.accept().await {
            let svc = service_fn(|req: http::Request<hyper::body::Incoming>| async move {
                let mut body = req.uri().path().to_owned();
                for name in req.headers().keys() {
                    body.push('\n');
                    body.push_str(name.as_str());
                }
                Ok::<_, std::convert::Infallible>(Response::new(Full::new(Bytes::from(body))))
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), svc)
                    .await;
            });
        }
    });
    addr
}

async fn l7_world() -> (World, ProxyChild) {
    let app = recording_app().await;
    let w = World::with_app(
        sim_builder(),
        json!({"Config": {"protocol": "http"}}),
        app,
        Arc::new(AtomicUsize::new(0)),
    )
    .await;
    w.c()
        .upsert_config_entry(&json!({"Kind": "service-defaults", "Name": "db", "Protocol": "http"}))
        .unwrap();
    let header = |name: &str| {
        json!({"Action": "deny", "HTTP": {"PathPrefix": "/",
        "Header": [{"Name": name, "Present": true}]}})
    };
    w.c()
        .put_intention(
            "web",
            "db",
            &json!({"Permissions": [
                {"Action": "deny", "HTTP": {"PathPrefix": "/admin"}},
                header("x_role"),
                header("x-debug"),
                {"Action": "allow", "HTTP": {"PathPrefix": "/"}},
            ]}),
        )
        .unwrap();
    let child = ProxyChild::start(&w).await;
    (w, child)
}

/// Sends `GET raw` with `headers` as raw bytes over a fresh mTLS connection as `web`: the
/// status and the body.
async fn get(w: &World, raw: &str, headers: &[&str]) -> (u16, String) {
    let mut tls = w.probe("web").connect(w.public()).await.unwrap();
    let mut req = format!("GET {raw} HTTP/1.1\r\nHost: db\r\n");
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    req.push_str("Connection: close\r\n\r\n");
    tls.write_all(req.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(PATIENCE, tls.read_to_end(&mut answer))
        .await
        .unwrap_or_else(|_| panic!("GET {raw}: no answer"))
        .ok();
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// Switches the mesh entry and waits until the proxy applies it (a probe request whose answer
/// differs under each setting).
async fn set_mesh(w: &World, mesh: Mesh) {
    match mesh.entry() {
        Some(e) => w.c().upsert_config_entry(&e).unwrap(),
        None => {
            let _ = w.c().delete_config_entry("mesh", "mesh");
        }
    };
    let (probe, want) = match mesh {
        Mesh::Defaults => ("/a%2Fb//x", "/a%2Fb//x"),
        Mesh::Lenient => ("/a%2Fb//x", "/a/b/x"),
        Mesh::Strict => ("/a%2Fb//x", ""),
    };
    eventually(&format!("mesh {mesh:?} applied"), PATIENCE, || async {
        let (status, body) = get(w, probe, &[]).await;
        if want.is_empty() {
            status == 400
        } else {
            status == 200 && body.lines().next() == Some(want)
        }
    })
    .await;
}

fn raw_path(segs: &[Seg]) -> String {
    let mut raw = String::new();
    for s in segs {
        raw.push('/');
        raw.push_str(match s {
            Seg::Name { raw, .. } => raw,
            Seg::Dot(r) | Seg::Up(r) | Seg::Escaped(r) => r,
            Seg::Empty => "",
        });
    }
    raw
}

#[test]
fn generated_bypass_attempts_never_reach_the_app_and_the_rest_arrive_normalized() {
    let rt = runtime();
    let _in_rt = rt.enter();
    let (w, mut child) = rt.block_on(l7_world());
    for mesh in [Mesh::Defaults, Mesh::Lenient, Mesh::Strict] {
        rt.block_on(set_mesh(&w, mesh));
        let mut runner = TestRunner::new(config());
        let strategy = (prop::collection::vec(segment(), 1..6), headers());
        let result = runner.run(&strategy, |(segs, headers)| {
            let raw = raw_path(&segs);
            let (status, path, role) = model(mesh, &segs, &headers);
            let (got, body) = rt.block_on(get(&w, &raw, &headers));
            prop_assert_eq!(
                got,
                status,
                "{:?} GET {} {:?}: {}",
                mesh,
                raw,
                headers,
                body
            );
            if status == 200 {
                let mut lines = body.lines();
                prop_assert_eq!(lines.next(), Some(path.as_str()), "{:?} GET {}", mesh, raw);
                let names: Vec<&str> = lines.collect();
                prop_assert_eq!(names.contains(&"x_role"), role, "{:?} {:?}", mesh, names);
                prop_assert!(!names.iter().any(|n| n.contains('_')) || role);
            }
            Ok(())
        });
        child.assert_alive("normalization abuse");
        result.unwrap_or_else(|e| panic!("{e}"));
    }
}
