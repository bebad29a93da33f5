//! The harness-run application behind the proxy: a TCP echo app that records every byte it
//! receives per connection (so "no byte reached the app" is checkable), or an HTTP app
//! (HTTP/1.1 or cleartext HTTP/2 with prior knowledge, detected per connection) answering
//! `200` with the request path as body, and gRPC calls as `apps/h2.rs` says (recording each
//! request line, one per stream). It listens on
//! loopback, on every address (transparent mode: so a dial that escapes the capture would
//! reach it), or on a unix socket.

pub(crate) mod h2;

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hyper::Request;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixListener};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::error::Error;

/// What the app speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AppKind {
    /// Echo every byte.
    Echo,
    /// HTTP/1.1 or h2c, `200` with the path; gRPC calls answered with trailers.
    Http,
}

/// Everything the app received, per connection, and the HTTP app's request headers in the
/// order the requests came.
#[derive(Debug, Default)]
pub(crate) struct Record {
    conns: Mutex<Vec<Vec<u8>>>,
    headers: Mutex<Vec<Vec<(String, String)>>>,
}

impl Record {
    fn open(&self) -> usize {
        let mut c = self.conns.lock();
        c.push(Vec::new());
        c.len() - 1
    }

    fn add(&self, conn: usize, bytes: &[u8]) {
        if let Some(v) = self.conns.lock().get_mut(conn) {
            v.extend_from_slice(bytes);
        }
    }

    /// How many requests the HTTP app has received (it records one line per request).
    pub(crate) fn requests(&self) -> usize {
        self.conns
            .lock()
            .iter()
            .map(|c| c.iter().filter(|&&b| b == b'\n').count())
            .sum()
    }

    fn add_headers(&self, headers: &hyper::HeaderMap) {
        let list = headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        self.headers.lock().push(list);
    }

    /// How many HTTP requests' headers are recorded (a mark for [`Self::headers_since`]).
    pub(crate) fn header_mark(&self) -> usize {
        self.headers.lock().len()
    }

    /// The headers of every HTTP request since `mark`, in order.
    pub(crate) fn headers_since(&self, mark: usize) -> Vec<Vec<(String, String)>> {
        self.headers.lock().get(mark..).unwrap_or_default().to_vec()
    }

    /// Whether any connection received `needle`.
    pub(crate) fn saw(&self, needle: &[u8]) -> bool {
        !needle.is_empty()
            && self
                .conns
                .lock()
                .iter()
                .any(|c| c.windows(needle.len()).any(|w| w == needle))
    }
}

/// Where the app listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AppBind {
    /// `127.0.0.1:0`.
    Loopback,
    /// `127.0.0.1:0` with a listen backlog of 4, so that a `blackhole` can fill it.
    LoopbackSmallBacklog,
    /// `0.0.0.0:0` (reached through the loopback address by the proxy).
    AnyAddress,
    /// `[::1]:0` (IPv6 scenarios).
    LoopbackV6,
    /// A unix socket at this path (made writable for every user: the proxy may run as another).
    Unix(PathBuf),
}

/// A running app; stops when dropped.
#[derive(Debug)]
pub(crate) struct App {
    /// Its TCP port on loopback (an unused placeholder port for a unix-socket app).
    pub(crate) addr: SocketAddr,
    pub(crate) record: Arc<Record>,
    pub(crate) behaviour: Arc<Behaviour>,
    task: JoinHandle<()>,
}

/// How the app behaves now (changed by `app` steps).
#[derive(Debug)]
pub(crate) struct Behaviour {
    /// The HTTP app waits this long before answering.
    delay: Mutex<Option<Duration>>,
    /// `false`: blackholed (not accepting).
    accepting: watch::Sender<bool>,
    /// The harness's connections that fill the backlog while blackholed.
    held: Mutex<Vec<TcpStream>>,
}

impl Default for Behaviour {
    fn default() -> Self {
        Self {
            delay: Mutex::new(None),
            accepting: watch::Sender::new(true),
            held: Mutex::new(Vec::new()),
        }
    }
}

impl App {
    /// From now on: answer after `delay` (HTTP), or (with `blackhole`) accept nothing and keep
    /// the listen backlog full; neither: normal again.
    pub(crate) async fn behave(&self, delay: Option<Duration>, blackhole: bool) {
        *self.behaviour.delay.lock() = delay;
        if blackhole {
            self.behaviour.accepting.send_replace(false);
            let held = fill_backlog(self.addr).await;
            self.behaviour.held.lock().extend(held);
        } else {
            self.behaviour.accepting.send_replace(true);
            self.behaviour.held.lock().clear();
        }
    }
}

/// Connects to `addr` until a connect stays pending: the backlog is then full and the kernel
/// drops further SYNs.
async fn fill_backlog(addr: SocketAddr) -> Vec<TcpStream> {
    let mut held = Vec::new();
    for _ in 0..16 {
        match tokio::time::timeout(Duration::from_millis(300), TcpStream::connect(addr)).await {
            Ok(Ok(s)) => held.push(s),
            _ => break,
        }
    }
    held
}

impl Drop for App {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts an app of `kind` listening as `bind` says.
pub(crate) async fn start(kind: AppKind, bind: AppBind) -> Result<App, Error> {
    let ip = match bind {
        AppBind::Loopback => Ipv4Addr::LOCALHOST,
        AppBind::AnyAddress => Ipv4Addr::UNSPECIFIED,
        AppBind::Unix(path) => {
            let listener = UnixListener::bind(&path)
                .map_err(|e| Error::io("bind the app's unix socket", e))?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777))
                .map_err(|e| Error::io("open the app's unix socket to the proxy", e))?;
            let record = Arc::new(Record::default());
            let behaviour = Arc::new(Behaviour::default());
            let (rec, b) = (record.clone(), behaviour.clone());
            let task = tokio::spawn(accept_loop(kind, rec, b, listener));
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
            return Ok(App {
                addr,
                record,
                behaviour,
                task,
            });
        }
        AppBind::LoopbackV6 => {
            let listener = TcpListener::bind("[::1]:0")
                .await
                .map_err(|e| Error::io("bind the app on [::1]", e))?;
            return on_listener(kind, listener);
        }
        AppBind::LoopbackSmallBacklog => {
            let small = || {
                let s = tokio::net::TcpSocket::new_v4()?;
                s.bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
                s.listen(4)
            };
            let listener = small().map_err(|e| Error::io("bind the app", e))?;
            return on_listener(kind, listener);
        }
    };
    let listener = TcpListener::bind((ip, 0))
        .await
        .map_err(|e| Error::io("bind the app", e))?;
    on_listener(kind, listener)
}

/// An app of `kind` on a bound listener (in whatever namespace it was made); `addr` is the
/// listener's port on loopback, or its own address when it is not a wildcard.
pub(crate) fn on_listener(kind: AppKind, listener: TcpListener) -> Result<App, Error> {
    let local = listener
        .local_addr()
        .map_err(|e| Error::io("read the app address", e))?;
    let addr = if local.ip().is_unspecified() {
        SocketAddr::from((Ipv4Addr::LOCALHOST, local.port()))
    } else {
        local
    };
    let record = Arc::new(Record::default());
    let behaviour = Arc::new(Behaviour::default());
    let (rec, b) = (record.clone(), behaviour.clone());
    let task = tokio::spawn(accept_loop(kind, rec, b, listener));
    Ok(App {
        addr,
        record,
        behaviour,
        task,
    })
}

/// A TCP or unix listener, as the app serves it.
trait Accept {
    type Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    async fn next(&self) -> std::io::Result<Self::Stream>;
}

impl Accept for TcpListener {
    type Stream = TcpStream;
    async fn next(&self) -> std::io::Result<Self::Stream> {
        self.accept().await.map(|(s, _)| s)
    }
}

impl Accept for UnixListener {
    type Stream = tokio::net::UnixStream;
    async fn next(&self) -> std::io::Result<Self::Stream> {
        self.accept().await.map(|(s, _)| s)
    }
}

/// Serves every connection `listener` accepts until accepting fails; while blackholed it
/// accepts nothing.
async fn accept_loop<L: Accept>(kind: AppKind, rec: Arc<Record>, b: Arc<Behaviour>, listener: L) {
    let mut conns = tokio::task::JoinSet::new();
    let mut accepting = b.accepting.subscribe();
    loop {
        if accepting.wait_for(|a| *a).await.is_err() {
            return;
        }
        // Biased, the blackhole first: once it is set no connection is accepted, even one ready
        // at the same poll (a random pick could take one of `fill_backlog`'s connections after
        // the backlog was found full, leaving a slot the proxy's dial would then land in).
        let stream = tokio::select! {
            biased;
            _ = accepting.wait_for(|a| !*a) => continue,
            s = listener.next() => match s {
                Ok(s) => s,
                Err(_) => return,
            },
        };
        conns.spawn(serve(kind, stream, rec.clone(), b.clone()));
        while conns.try_join_next().is_some() {}
    }
}

async fn serve<S>(kind: AppKind, stream: S, rec: Arc<Record>, b: Arc<Behaviour>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    match kind {
        AppKind::Echo => echo(stream, &rec).await,
        AppKind::Http => http(stream, rec, b).await,
    }
}

async fn echo<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, rec: &Record) {
    let id = rec.open();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                rec.add(id, &buf[..n]);
                if stream.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

async fn http<S>(stream: S, rec: Arc<Record>, b: Arc<Behaviour>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let id = rec.open();
    let server = Arc::new(h2::Server {
        served_by: "app".into(),
        client: None,
    });
    let svc = service_fn(move |req: Request<hyper::body::Incoming>| {
        let line = format!("{} {}\n", req.method(), req.uri());
        rec.add(id, line.as_bytes());
        rec.add_headers(req.headers());
        let server = server.clone();
        let delay = *b.delay.lock();
        async move {
            if let Some(d) = delay {
                tokio::time::sleep(d).await;
            }
            Ok::<_, Infallible>(h2::answer(req, &server).await)
        }
    });
    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(stream), svc)
        .await;
}

#[cfg(test)]
mod tests {
    use tokio::net::{TcpStream, UnixStream};

    use super::*;

    #[tokio::test]
    async fn echo_app_echoes_and_records() {
        let app = start(AppKind::Echo, AppBind::Loopback).await.unwrap();
        let mut s = TcpStream::connect(app.addr).await.unwrap();
        s.write_all(b"hello token-42").await.unwrap();
        let mut buf = [0u8; 14];
        s.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"hello token-42");
        assert!(app.record.saw(b"token-42"));
        assert!(!app.record.saw(b"token-43"));
        assert!(!app.record.saw(b""));
    }

    #[tokio::test]
    async fn http_app_answers_with_the_path() {
        let app = start(AppKind::Http, AppBind::AnyAddress).await.unwrap();
        let mut s = TcpStream::connect(app.addr).await.unwrap();
        s.write_all(b"GET /a/b?q=1 HTTP/1.1\r\nHost: db\r\n\r\n")
            .await
            .unwrap();
        let mut buf = vec![0u8; 1024];
        let n = s.read(&mut buf).await.unwrap();
        let text = String::from_utf8_lossy(&buf[..n]);
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.ends_with("\r\n\r\n/a/b"), "{text}");
        assert!(app.record.saw(b"GET /a/b?q=1"));
        assert_eq!(app.record.requests(), 1);
    }

    #[tokio::test]
    async fn unix_socket_app_is_open_to_every_user() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.sock");
        let app = start(AppKind::Echo, AppBind::Unix(path.clone()))
            .await
            .unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o777);
        let mut s = UnixStream::connect(&path).await.unwrap();
        s.write_all(b"via-socket").await.unwrap();
        let mut buf = [0u8; 10];
        s.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"via-socket");
        assert!(app.record.saw(b"via-socket"));
    }
}
