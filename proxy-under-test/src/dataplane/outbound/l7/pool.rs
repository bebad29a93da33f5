//! Pooled mTLS connections to upstream instances, shared by every application connection of
//! the data plane: per endpoint, idle HTTP/1.1 connections (one request at a time; a connection
//! is reused once its previous response has been read) or one multiplexed HTTP/2 connection
//! (ALPN `h2`). Connections are opened with the outbound mTLS dial, bounded by the cluster's
//! connect timeout.

use std::collections::HashMap;
use std::time::Duration;

use hyper::client::conn::{http1, http2};
use hyper_util::rt::TokioIo;
use tokio::sync::Mutex;

use super::super::dial;
use crate::dataplane::l7::app::{AppBody, handshake2};
use crate::snapshot::{Endpoint, Snapshot, Target};

/// A connection to send one request on.
pub(crate) enum Sender {
    /// HTTP/1.1.
    H1(http1::SendRequest<AppBody>),
    /// HTTP/2.
    H2(http2::SendRequest<AppBody>),
}

#[derive(Default)]
struct Entry {
    h1: Vec<http1::SendRequest<AppBody>>,
    h2: Option<http2::SendRequest<AppBody>>,
}

/// The pool.
#[derive(Default)]
pub(crate) struct Pool {
    entries: Mutex<HashMap<String, Entry>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").finish_non_exhaustive()
    }
}

/// Why no connection could be had.
#[derive(Debug)]
pub(crate) struct ConnectFailure(pub(crate) String);

impl Pool {
    /// A ready connection to `ep` of `target` (pooled or new).
    pub(crate) async fn get(
        &self,
        snap: &Snapshot,
        target: &Target,
        ep: &Endpoint,
        h2: bool,
        timeout: Duration,
    ) -> Result<Sender, ConnectFailure> {
        let key = format!(
            "{}|{}|{}|{}:{}|{h2}",
            target.service, target.namespace, target.datacenter, ep.host, ep.port
        );
        {
            let mut entries = self.entries.lock().await;
            let e = entries.entry(key.clone()).or_default();
            if h2 {
                if let Some(s) = e.h2.as_ref().filter(|s| !s.is_closed()) {
                    return Ok(Sender::H2(s.clone()));
                }
            } else {
                e.h1.retain(|s| !s.is_closed());
                if let Some(i) = e.h1.iter().position(http1::SendRequest::is_ready) {
                    return Ok(Sender::H1(e.h1.swap_remove(i)));
                }
            }
        }
        let dialed = tokio::time::timeout(timeout, async {
            let tls = dial(snap, target, ep, h2).await?;
            if h2 {
                handshake2(tls)
                    .await
                    .map(Sender::H2)
                    .map_err(|e| format!("HTTP/2: {e}"))
            } else {
                let (s, conn) = http1::handshake(TokioIo::new(tls))
                    .await
                    .map_err(|e| format!("HTTP/1.1: {e}"))?;
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                Ok(Sender::H1(s))
            }
        })
        .await
        .map_err(|_| ConnectFailure("connect timeout".into()))?
        .map_err(ConnectFailure)?;
        if let Sender::H2(s) = &dialed {
            self.entries.lock().await.entry(key).or_default().h2 = Some(s.clone());
        }
        Ok(dialed)
    }

    /// Returns an HTTP/1.1 connection that carried a request (it is reused once ready).
    pub(crate) async fn put_back(
        &self,
        snap_key: (&Target, &Endpoint),
        sender: http1::SendRequest<AppBody>,
    ) {
        let (target, ep) = snap_key;
        let key = format!(
            "{}|{}|{}|{}:{}|false",
            target.service, target.namespace, target.datacenter, ep.host, ep.port
        );
        let mut entries = self.entries.lock().await;
        let e = entries.entry(key).or_default();
        if e.h1.len() < 256 && !sender.is_closed() {
            e.h1.push(sender);
        }
    }
}
