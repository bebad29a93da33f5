//! One attempt of a request to one endpoint: a pooled connection, the request sent, the response
//! headers awaited; a connection that had just closed before the request went out is redialed
//! once (that is not an attempt of its own).

use std::time::Duration;

use http::{Request, Response};
use http_body_util::BodyExt;

use super::pool::{Pool, Sender};
use crate::dataplane::l7::Body;
use crate::dataplane::l7::app::AppBody;
use crate::snapshot::{Endpoint, Snapshot, Target};

/// Where an attempt goes.
pub(super) struct Attempt<'a> {
    pub(super) pool: &'a Pool,
    pub(super) snap: &'a Snapshot,
    pub(super) target: &'a Target,
    pub(super) ep: &'a Endpoint,
    pub(super) h2: bool,
    pub(super) connect_timeout: Duration,
}

/// How an attempt failed.
#[derive(Debug)]
pub(super) enum Failure {
    /// No connection.
    Connect(String),
    /// The request failed on an open connection.
    Reset(hyper::Error),
}

/// Sends `req` as attempt `a`.
pub(super) async fn send(
    a: Attempt<'_>,
    mut req: Request<AppBody>,
) -> Result<Response<Body>, Failure> {
    for round in 0..2 {
        let sender = a
            .pool
            .get(a.snap, a.target, a.ep, a.h2, a.connect_timeout)
            .await
            .map_err(|e| Failure::Connect(e.0))?;
        let result = match sender {
            Sender::H2(mut s) => s.try_send_request(req).await,
            Sender::H1(mut s) => {
                let fut = s.try_send_request(req);
                let r = fut.await;
                a.pool.put_back((a.target, a.ep), s).await;
                r
            }
        };
        match result {
            Ok(resp) => return Ok(resp.map(BodyExt::boxed)),
            Err(mut e) => match e.take_message() {
                Some(unsent) if round == 0 => req = unsent,
                _ => return Err(Failure::Reset(e.into_error())),
            },
        }
    }
    Err(Failure::Connect("connection closed".into()))
}
