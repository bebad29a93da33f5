//! Unix sockets and hostname endpoints: an application behind the proxy listening on a unix
//! socket (L4 and L7), an upstream exposed to the application on a unix socket (mode, mTLS to
//! the instance, socket file removed when the upstream goes and at shutdown), and an upstream
//! instance registered under a host name.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use proxy_under_test::LocalApp;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

use super::support::*;

/// A short-pathed temporary directory (socket paths must stay under ~100 bytes).
fn sock_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("put")
        .tempdir_in("/tmp")
        .unwrap()
}

fn is_socket(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

/// A unix-socket echo application; returns how many connections it accepted.
fn unix_echo_app(path: &Path) -> Arc<AtomicUsize> {
    let l = UnixListener::bind(path).unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    accepted
}

/// A unix-socket HTTP/1.1 application answering `200 unix <method> <path>`.
fn unix_http_app(path: &Path) {
    let l = UnixListener::bind(path).unwrap();
    tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            let svc = service_fn(|req: Request<Incoming>| async move {
                let body = format!("unix {} {}", req.method(), req.uri().path());
                Ok::<_, std::convert::Infallible>(Response::new(Full::new(Bytes::from(body))))
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(s), svc)
                    .await;
            });
        }
    });
}

/// A world whose `db` listens on the unix socket `app` (registered with `SocketPath`, so the
/// sidecar gets `LocalServiceSocketPath`).
async fn socket_world(app: &Path) -> World {
    let w = World::basic().await;
    w.c()
        .register(&json!({
            "Name": "db", "Address": "127.0.0.1", "SocketPath": app.to_str().unwrap(),
            "Connect": {"SidecarService": {"Port": w.public_port,
                "Proxy": {"Config": {"reauthorize_interval_ms": 200}}}}
        }))
        .unwrap();
    w
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbound_mtls_reaches_a_unix_socket_app() {
    let dir = sock_dir();
    let app = dir.path().join("db.sock");
    let accepted = unix_echo_app(&app);
    let w = socket_world(&app).await;
    w.allow("web");
    w.deny("api");
    let proxy = w.proxy().await;
    let snap = proxy.snapshots().borrow().clone().unwrap();
    assert_eq!(snap.local_app, LocalApp::Unix(app.clone()));
    w.probe("web")
        .echo(w.public(), b"through a unix socket")
        .await
        .unwrap();
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    assert!(w.probe("api").echo(w.public(), b"x").await.is_err());
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "denied peer reached the app"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn l7_requests_reach_a_unix_socket_app() {
    let dir = sock_dir();
    let app = dir.path().join("db.sock");
    unix_http_app(&app);
    let w = socket_world(&app).await;
    w.c()
        .upsert_config_entry(&json!({"Kind": "service-defaults", "Name": "db", "Protocol": "http"}))
        .unwrap();
    w.allow("web");
    let _proxy = w.proxy().await;
    let tls = w.probe("web").connect(w.public()).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let req = Request::get("/items/7")
        .header("host", "db")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let resp = sender.send_request(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"unix GET /items/7");
}

/// A world whose `db` sidecar exposes upstream `cache` on the unix socket `path` (`mode`).
async fn upstream_world(path: &Path, mode: &str) -> World {
    World::new(sim_builder(), upstream_proxy(path, mode)).await
}

fn upstream_proxy(path: &Path, mode: &str) -> Value {
    json!({"Config": {"reauthorize_interval_ms": 200},
           "Upstreams": [{"DestinationName": "cache", "LocalBindSocketPath": path.to_str().unwrap(),
                          "LocalBindSocketMode": mode}]})
}

/// An mTLS `cache` instance registered on node `n2` with `Service.Address` = `address`.
async fn cache_instance(w: &World, name: &str, address: &str) -> FakeUpstream {
    let c = w.c();
    let u = FakeUpstream::start(name, &c.issue_identity("cache").unwrap(), &c.root_pems()).await;
    c.catalog_register(&json!({
        "Node": "n2", "Address": "127.0.0.1",
        "Service": {"Kind": "connect-proxy", "ID": name, "Service": "cache-sidecar-proxy",
            "Address": address, "Port": u.addr.port(), "Proxy": {"DestinationServiceName": "cache"}},
        "Check": {"CheckID": format!("{name}-alive"), "Name": "alive", "Status": "passing",
            "ServiceID": name}
    }))
    .unwrap();
    u
}

/// Sends a line through the unix-socket upstream listener; returns the answering instance.
async fn via_socket(path: &Path) -> Result<String, String> {
    let fut = async {
        let mut s = UnixStream::connect(path)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        s.write_all(b"hello\n")
            .await
            .map_err(|e| format!("write: {e}"))?;
        let mut line = String::new();
        BufReader::new(&mut s)
            .read_line(&mut line)
            .await
            .map_err(|e| format!("read: {e}"))?;
        line.trim_end()
            .strip_suffix(" hello")
            .map(str::to_owned)
            .ok_or_else(|| format!("unexpected answer {line:?}"))
    };
    tokio::time::timeout(Duration::from_secs(10), fut)
        .await
        .map_err(|_| "round trip timed out".to_owned())?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_on_a_unix_socket_with_its_mode_is_removed_at_shutdown() {
    let dir = sock_dir();
    let path = dir.path().join("cache.sock");
    let w = upstream_world(&path, "0600").await;
    let cache = cache_instance(&w, "cache-1", "127.0.0.1").await;
    let proxy = w.proxy().await;
    assert_eq!(proxy.upstream_socket("cache"), Some(path.clone()));
    assert_eq!(proxy.upstream_addr("cache"), None, "no TCP listener");
    assert!(is_socket(&path));
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "LocalBindSocketMode 0600, got {mode:o}");
    eventually("cache-1 reached through the socket", PATIENCE, || async {
        via_socket(&path).await.as_deref() == Ok("cache-1")
    })
    .await;
    let db = format!("spiffe://{}/ns/default/dc/dc1/svc/db", w.c().trust_domain());
    let seen = cache.client_uris();
    assert!(
        !seen.is_empty() && seen.iter().all(|u| *u == db),
        "{seen:?}"
    );
    proxy.shutdown().await;
    assert!(!path.exists(), "socket file removed at shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_socket_replaced_and_removed_with_the_upstream() {
    let dir = sock_dir();
    let path: PathBuf = dir.path().join("cache.sock");
    // Left behind by a previous run.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    let w = upstream_world(&path, "0o640").await;
    let _cache = cache_instance(&w, "cache-1", "127.0.0.1").await;
    let proxy = w.proxy().await;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    eventually("cache-1 reached through the socket", PATIENCE, || async {
        via_socket(&path).await.as_deref() == Ok("cache-1")
    })
    .await;
    // The upstream leaves the registration: its listener closes and the file goes.
    w.register_db(&json!({"Config": {"reauthorize_interval_ms": 200}}));
    eventually(
        "socket file removed with the upstream",
        PATIENCE,
        || async { !path.exists() },
    )
    .await;
    assert_eq!(proxy.upstream_socket("cache"), None);
    // And comes back.
    w.register_db(&upstream_proxy(&path, "0600"));
    eventually("socket back with the upstream", PATIENCE, || async {
        via_socket(&path).await.as_deref() == Ok("cache-1")
    })
    .await;
    proxy.shutdown().await;
    assert!(!path.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_regular_file_in_the_way_fails_startup_and_is_kept() {
    let dir = sock_dir();
    let path = dir.path().join("cache.sock");
    std::fs::write(&path, b"not a socket").unwrap();
    let w = upstream_world(&path, "0600").await;
    let started = tokio::time::timeout(
        PATIENCE,
        proxy_under_test::Proxy::new(w.client(), "db-sidecar-proxy").start(),
    )
    .await
    .expect("start returns");
    let Err(err) = started else {
        panic!("startup must be refused");
    };
    let err = err.to_string();
    assert!(err.contains("is not a socket"), "{err}");
    assert!(err.contains("cache.sock"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), b"not a socket");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_registered_as_localhost_is_reached() {
    let up = free_port();
    let w = World::new(
        sim_builder(),
        json!({"Config": {"reauthorize_interval_ms": 200},
               "Upstreams": [{"DestinationName": "cache", "LocalBindPort": up}]}),
    )
    .await;
    let cache = cache_instance(&w, "cache-dns", "localhost").await;
    let proxy = w.proxy().await;
    let addr = proxy.upstream_addr("cache").unwrap();
    eventually("host-named instance reached", PATIENCE, || async {
        via_upstream(addr).await.as_deref() == Ok("cache-dns")
    })
    .await;
    let snap = proxy.snapshots().borrow().clone().unwrap();
    let hosts: Vec<&str> = snap.upstream("cache").unwrap().targets[0]
        .endpoints
        .iter()
        .map(|e| e.host.as_str())
        .collect();
    assert_eq!(hosts, ["localhost"], "kept as a name, resolved when dialed");
    let db = format!("spiffe://{}/ns/default/dc/dc1/svc/db", w.c().trust_domain());
    assert!(cache.client_uris().iter().all(|u| *u == db));
}
