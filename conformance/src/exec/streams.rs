//! `grpc` checks: unary calls on a new mTLS HTTP/2 connection, on one opened by an `open`
//! step (several at once as concurrent streams), or from the app through an upstream's local
//! listener; each call's grpc-status and trailers are compared with what the check expects,
//! and every stream's outcome goes into the observation.

use std::collections::BTreeMap;

use agent_sim::ca::ClientIdentity;
use bytes::Bytes;

use super::Exec;
use super::wait::Observation;
use crate::grpc::{self, Answer};
use crate::probe::{self, GrpcCall};

/// What a call must end with.
pub(super) struct GrpcWant<'a> {
    pub(super) code: u32,
    pub(super) trailers: &'a BTreeMap<String, String>,
}

impl GrpcWant<'_> {
    /// Why `a` is not what is wanted, if it is not.
    fn mismatch(&self, a: &Answer) -> Option<String> {
        if a.code != self.code {
            return Some(format!("grpc-status {}, not {}", a.code, self.code));
        }
        for (k, v) in self.trailers {
            match a.trailers.get(k) {
                Some(got) if got == v => {}
                Some(got) => return Some(format!("trailer {k}={got}, not {v}")),
                None => return Some(format!("no trailer {k}")),
            }
        }
        None
    }
}

impl Exec<'_> {
    pub(super) async fn observe_grpc(
        &mut self,
        conn: Option<&str>,
        upstream: Option<&str>,
        (path, metadata): (&str, &BTreeMap<String, String>),
        want: &GrpcWant<'_>,
        (material, streams): (Option<&ClientIdentity>, u32),
    ) -> Observation {
        let token = probe::token();
        let mut md: Vec<(String, String)> = metadata
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        md.push((grpc::TOKEN_HEADER.to_owned(), token.clone()));
        let call = GrpcCall {
            path: path.to_owned(),
            metadata: md,
            message: Bytes::from(token.clone()),
        };
        let got = match (conn, upstream) {
            (Some(c), _) => match self.conns.get_mut(c) {
                Some(c) => c.grpc(&call, streams).await,
                None => vec![Err(format!("connection {c} was never established"))],
            },
            (None, Some(u)) => match self.world.upstream_addr(u) {
                None => vec![Err("no such upstream".to_owned())],
                Some(to) => match probe::h2_plain(&to).await {
                    Ok(c) => c.grpc(&call, streams).await,
                    Err(e) => vec![Err(e)],
                },
            },
            (None, None) => match probe::h2_tls(self.world.inbound_addr(), material).await {
                Ok(c) => c.grpc(&call, streams).await,
                Err(e) => vec![Err(e)],
            },
        };
        let mut problems = Vec::new();
        for (i, r) in got.iter().enumerate() {
            match r {
                Ok(a) => {
                    if let Some(m) = want.mismatch(a) {
                        problems.push(format!("#{}: {m}", i + 1));
                    }
                }
                Err(e) => problems.push(format!("#{}: {e}", i + 1)),
            }
        }
        let text = probe::describe_streams(&got, Answer::describe);
        if upstream.is_some() && problems.is_empty() {
            // The instance that answered must have recorded the call.
            if self.world.instances.who_saw(&token).is_none() {
                return Observation::new(false, format!("{text}; no instance recorded the call"));
            }
        }
        if problems.is_empty() {
            Observation::new(true, text)
        } else {
            Observation::new(false, format!("{text} [{}]", problems.join("; ")))
        }
    }
}
