//! Where accepted TCP connections run. Without [`Workers`] (the library's default), on the
//! runtime that started the data plane. With them (the binary's default), each connection
//! accepted by the public or an upstream TCP listener moves to one of N single-threaded
//! runtimes, round-robin, each on its own OS thread, as Envoy's workers: the socket is
//! registered with that thread's own epoll, so the connection's reads, writes, timers and
//! wake-ups stay on one thread (no work stealing, no cross-thread wake-ups on the hot path),
//! while new connections (their TLS handshakes) still spread over the cores.

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::net::TcpStream;
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use super::Shared;

/// A set of single-threaded connection runtimes. Dropping the last handle stops their threads
/// (and drops whatever still runs on them); nothing waits for them.
#[derive(Debug)]
pub struct Workers {
    handles: Vec<Handle>,
    next: AtomicUsize,
    /// Dropped with the set: each worker thread returns when its sender is gone.
    _stops: Vec<oneshot::Sender<()>>,
}

impl Workers {
    /// Starts `n` worker threads (at least one), named `proxy-worker-<i>`.
    pub fn start(n: usize) -> io::Result<Self> {
        let mut handles = Vec::new();
        let mut stops = Vec::new();
        for i in 0..n.max(1) {
            let rt = tokio::runtime::Builder::new_current_thread()
                .on_thread_park(crate::tls::make_key_share_ahead)
                .enable_all()
                .build()?;
            let (stop, stopped) = oneshot::channel::<()>();
            handles.push(rt.handle().clone());
            stops.push(stop);
            std::thread::Builder::new()
                .name(format!("proxy-worker-{i}"))
                .spawn(move || {
                    let _ = rt.block_on(stopped);
                })?;
        }
        Ok(Self {
            handles,
            next: AtomicUsize::new(0),
            _stops: stops,
        })
    }

    /// As many workers as the machine has cores (`available_parallelism`, 1 if unknown).
    pub fn per_core() -> io::Result<Self> {
        Self::start(std::thread::available_parallelism().map_or(1, usize::from))
    }

    /// How many worker threads there are.
    pub fn len(&self) -> usize {
        self.handles.len()
    }

    /// Never: there is at least one worker.
    pub fn is_empty(&self) -> bool {
        self.handles.is_empty()
    }

    /// Runs `fut` on the next worker.
    pub fn spawn<F>(&self, fut: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.pick().spawn(fut)
    }

    fn pick(&self) -> &Handle {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.handles.len();
        &self.handles[i]
    }
}

/// Runs `serve(tcp)` as a task of its own: on the next worker when the data plane has workers
/// (the socket re-registered there), on the current runtime otherwise.
pub(crate) fn spawn_tcp<F, Fut>(shared: &Shared, tcp: TcpStream, serve: F)
where
    F: FnOnce(TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Some(workers) = &shared.workers else {
        tokio::spawn(serve(tcp));
        return;
    };
    // Leaves this runtime's epoll; non-blocking mode is kept.
    let std = match tcp.into_std() {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "cannot hand an accepted connection to a worker");
            return;
        }
    };
    workers.pick().spawn(async move {
        match TcpStream::from_std(std) {
            Ok(tcp) => serve(tcp).await,
            Err(e) => tracing::warn!(error = %e, "worker cannot register a connection"),
        }
    });
}
