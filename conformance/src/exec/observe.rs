//! What each check observes: one observation per call (the within/stable_for evaluation
//! repeats it), from probes of the proxy, the harness-run instances and the request log.

use std::collections::BTreeSet;
use std::time::Duration;

use agent_sim::ca::ClientIdentity;
use scenarios::{Check, InboundVia, Outcome as Expected, RootRef, UpstreamVia};

use super::Exec;
use super::usage::{self, UsageSpec};
use super::wait::Observation;
use crate::probe::{self, HttpProbe, Inbound};
use crate::proxy::ListenAddr;
use crate::tls;

impl Exec<'_> {
    pub(super) async fn observe(
        &mut self,
        check: &Check,
        material: Option<&ClientIdentity>,
    ) -> Observation {
        let inbound = self.world.inbound_addr();
        match check {
            Check::TlsHandshake {
                tls_version,
                cipher_suites,
                outcome,
                negotiated_cipher,
                ..
            } => {
                let got =
                    probe::tls_handshake(inbound, material, tls_version.as_deref(), cipher_suites)
                        .await;
                match (got, outcome) {
                    (Ok((v, c)), Expected::Allowed) => {
                        let ok = negotiated_cipher.as_ref().is_none_or(|want| *want == c);
                        Observation::new(ok, format!("handshake completed: {v} {c}"))
                    }
                    (Ok((v, c)), Expected::Refused) => {
                        Observation::new(false, format!("handshake completed: {v} {c}"))
                    }
                    (Err(e), Expected::Refused) => Observation::new(true, e),
                    (Err(e), Expected::Allowed) => Observation::new(false, e),
                }
            }
            Check::Inbound { outcome, via, .. } => {
                let app = &self.world.app;
                let seen = match (via, material) {
                    (InboundVia::PublicListener, _) => probe::inbound(inbound, material, app).await,
                    (InboundVia::AppPort, None) => {
                        probe::inbound_plain(self.world.app_port_addr(), app).await
                    }
                    (InboundVia::AppPort, Some(_)) => {
                        probe::inbound(self.world.app_port_addr(), material, app).await
                    }
                    (InboundVia::ExcludedPort, _) => {
                        let server = self.world.pod.as_ref().and_then(|p| {
                            Some((p.excluded.inbound_addr()?, p.excluded.inbound.as_ref()?))
                        });
                        let Some((addr, server)) = server else {
                            return Observation::new(false, "the pod has no excluded-port server");
                        };
                        // Reaching the plain server directly is what the exclusion is for.
                        // (An echo is what `inbound_plain` calls allowed; the plain server echoes.)
                        return match probe::inbound_plain(addr, server).await {
                            Inbound::Allowed { .. } | Inbound::Leaked { .. } => Observation::new(
                                *outcome == Expected::Allowed,
                                format!("the plain server on {addr} echoed: not captured"),
                            ),
                            seen => Observation::new(
                                *outcome == Expected::Refused,
                                format!("not reached directly: {seen}"),
                            ),
                        };
                    }
                };
                let ok = match outcome {
                    Expected::Allowed => matches!(seen, Inbound::Allowed { .. }),
                    Expected::Refused => matches!(seen, Inbound::Refused { .. }),
                };
                Observation::new(ok, seen.to_string())
            }
            Check::Http {
                conn,
                method,
                path,
                headers,
                jwt,
                status,
                streams,
                app_path,
                app_headers,
                app_without,
                ..
            } => {
                let mut headers = headers.clone();
                let mut bearer = None;
                if let Some(t) = jwt {
                    match self.world.jwt.authorization(t) {
                        Ok(Some(v)) => {
                            bearer = Some(v.clone());
                            headers.insert("Authorization".into(), v);
                        }
                        Ok(None) => {}
                        Err(e) => return Observation::new(false, e.to_string()),
                    }
                }
                let req = HttpProbe {
                    method: method.clone().unwrap_or_else(|| "GET".into()),
                    path: path.clone(),
                    headers,
                };
                let before = self.world.app.record.requests();
                let mark = self.world.app.record.header_mark();
                let (got, body) = match conn {
                    Some(c) => match self.conns.get_mut(c) {
                        Some(c) => (c.http(&req, streams.unwrap_or(1)).await, None),
                        None => (
                            vec![Err(format!("connection {c} was never established"))],
                            None,
                        ),
                    },
                    None => match probe::http_one_shot(inbound, material, &req).await {
                        Ok((s, b)) => (vec![Ok(s)], Some(b)),
                        Err(e) => (vec![Err(e)], None),
                    },
                };
                let mut ok = got.iter().all(|r| r.as_ref() == Ok(status));
                let mut text = probe::describe_streams(&got, |s| format!("HTTP {s}"));
                if let (Some(want), true) = (app_path, ok) {
                    // The HTTP app answers with the path it received.
                    let seen = body
                        .as_deref()
                        .map(String::from_utf8_lossy)
                        .unwrap_or_default();
                    ok = seen == want.as_str();
                    text.push_str(&format!(", the app received {seen}"));
                }
                if ok && (!app_headers.is_empty() || !app_without.is_empty()) {
                    let received = self.world.app.record.headers_since(mark);
                    let (seen_ok, seen) = super::app_seen::judge(
                        &received,
                        app_headers,
                        app_without,
                        bearer.as_deref(),
                    );
                    ok = seen_ok;
                    text.push_str(&format!(", {seen}"));
                }
                // A 504 is the proxy's answer to a request the app received and did not
                // answer in time (`local_request_timeout_ms`): the app did see it.
                if !(200..300).contains(status) && *status != 504 {
                    let reached = self.world.app.record.requests().saturating_sub(before);
                    if reached > 0 {
                        ok = false;
                        text.push_str(&format!(", yet {reached} request(s) reached the app"));
                    }
                }
                Observation::new(ok, text)
            }
            Check::Grpc {
                conn,
                upstream,
                path,
                metadata,
                code,
                trailers,
                streams,
                ..
            } => {
                let want = super::streams::GrpcWant {
                    code: *code,
                    trailers,
                };
                self.observe_grpc(
                    conn.as_deref(),
                    upstream.as_deref(),
                    (path, metadata),
                    &want,
                    (material, streams.unwrap_or(1)),
                )
                .await
            }
            Check::ConnOpen { conn } => match self.conns.get_mut(conn) {
                None => Observation::new(false, format!("connection {conn} was never established")),
                Some(c) => match c.check_open().await {
                    Ok(ms) => Observation::new(true, format!("round trip in {ms} ms")),
                    Err(e) => Observation::new(false, format!("not usable: {e}")),
                },
            },
            Check::ConnClosed { conn } => match self.conns.get(conn) {
                None => Observation::new(false, format!("connection {conn} was never established")),
                Some(c) => match c.closed() {
                    Some((at, how)) => Observation {
                        ok: true,
                        text: how,
                        since: Some(at),
                    },
                    None => Observation::new(false, "open (no close seen)"),
                },
            },
            Check::ServedLeaf {
                service,
                root,
                differs_from_mark,
                key_type,
                key_bits,
                full_chain,
            } => {
                let want = LeafWant {
                    key_type: key_type.as_deref(),
                    key_bits: *key_bits,
                    full_chain: *full_chain,
                };
                self.observe_leaf(material, service, *root, differs_from_mark.as_deref(), want)
                    .await
            }
            Check::Upstream {
                upstream,
                reach,
                all,
                presented,
                via,
            } => {
                let to = match via {
                    UpstreamVia::Listener => self.world.upstream_addr(upstream),
                    UpstreamVia::VirtualIp => match self.virtual_ip_target(upstream) {
                        Ok(to) => Some(ListenAddr::Tcp(to)),
                        Err(o) => return o,
                    },
                };
                let Some(to) = to else {
                    return Observation::new(false, "no such upstream");
                };
                self.observe_upstream(&to, reach, *all, presented).await
            }
            Check::Request(c) => self.observe_request(c).await,
            Check::Spread(c) => self.observe_spread(c).await,
            Check::Burst(c) => self.observe_burst(c).await,
            Check::UnknownDestination {
                outcome,
                to,
                as_excluded_uid,
            } => self.observe_unknown(*outcome, *to, *as_excluded_uid).await,
            Check::NoRedirectLoop => self.observe_no_loop().await,
            Check::UpstreamRefused { upstream } => {
                let Some(addr) = self.world.upstream_addr(upstream) else {
                    return Observation::new(false, "no such upstream");
                };
                let attempt = probe::upstream_once(&addr).await;
                tokio::time::sleep(Duration::from_millis(100)).await;
                match (self.world.instances.who_saw(&attempt.token), attempt.answer) {
                    (Some((i, _)), _) => {
                        Observation::new(false, format!("bytes reached instance {}", i.id))
                    }
                    (None, Ok(id)) => Observation::new(false, format!("answered {id:?}")),
                    (None, Err(e)) => {
                        Observation::new(true, format!("no instance received bytes ({e})"))
                    }
                }
            }
            Check::ListenerOpen { upstream } => {
                let Some(addr) = self.world.upstream_addr(upstream) else {
                    return Observation::new(false, "no such upstream");
                };
                match probe::listener_open(&addr).await {
                    Ok(()) => Observation::new(true, format!("{addr} accepts connections")),
                    Err(e) => Observation::new(false, format!("{addr}: {e}")),
                }
            }
            Check::AgentUsage {
                token_on_every_request,
                blocking,
                max_requests_per_minute,
            } => {
                let log = self.world.control().request_log();
                let spec = UsageSpec {
                    token_on_every_request: *token_on_every_request,
                    blocking,
                    max_requests_per_minute: *max_requests_per_minute,
                };
                let window = self.last_mark.at.elapsed();
                usage::agent_usage(
                    &log,
                    self.last_mark.log_seq,
                    window,
                    &self.world.token,
                    spec,
                )
            }
            Check::IndexResetHonoured => {
                let log = self.world.control().request_log();
                usage::index_reset_honoured(&log, self.last_mark.log_seq)
            }
            Check::ProxyLog { contains } => super::proxy_log::observe(&self.output, contains),
            Check::AuthorizeSerial => {
                let calls = self.world.control().authorize_calls();
                let without = calls
                    .iter()
                    .filter(|c| c.client_cert_serial.is_empty())
                    .count();
                let text = match (calls.len(), without) {
                    (0, _) => "no authorize calls (the proxy decides from its cached intentions)"
                        .to_owned(),
                    (n, 0) => format!("{n} authorize call(s), each with a ClientCertSerial"),
                    (n, k) => format!("{n} authorize call(s), {k} without a ClientCertSerial"),
                };
                Observation::new(without == 0, text)
            }
        }
    }

    async fn observe_leaf(
        &mut self,
        material: Option<&ClientIdentity>,
        service: &str,
        root: RootRef,
        differs_from: Option<&str>,
        want: LeafWant<'_>,
    ) -> Observation {
        let chain = match probe::served_chain(self.world.inbound_addr(), material).await {
            Ok(c) => c,
            Err(e) => return Observation::new(false, format!("no certificate served: {e}")),
        };
        let Some(leaf) = chain.first() else {
            return Observation::new(false, "an empty chain");
        };
        let roots = agent_sim::play::roots(self.world.control());
        let mut problems = Vec::new();
        let uris = tls::uri_sans(leaf);
        let uri = uris.first().cloned().unwrap_or_default();
        match tls::spiffe_service(&uri) {
            Some((td, svc)) => {
                if svc != service {
                    problems.push(format!("names svc/{svc}, not svc/{service}"));
                }
                if !td.eq_ignore_ascii_case(&roots.trust_domain) {
                    problems.push(format!("trust domain {td}, not {}", roots.trust_domain));
                }
            }
            None => problems.push(format!("no Consul service SPIFFE ID (URI SANs {uris:?})")),
        }
        let (pems, which) = match root {
            RootRef::Active => (vec![roots.active_pem.clone()], "the active root"),
            RootRef::AnyListed => (roots.pems.clone(), "a listed root"),
        };
        if let Err(e) = tls::verify_chain(&chain, &pems) {
            problems.push(format!("does not chain to {which}: {e}"));
        }
        if let Some(m) = differs_from {
            match self.marks.get(m).map(|m| m.leaf.as_deref()) {
                Some(Some(old)) if old == leaf.as_ref() => {
                    problems.push(format!("still the leaf served at {m}"));
                }
                Some(Some(_)) => {}
                _ => problems.push(format!("no leaf was captured at {m}")),
            }
        }
        if let Some(p) = super::chain_check::key_problem(leaf, want.key_type, want.key_bits) {
            problems.push(p);
        }
        if want.full_chain
            && let Some(p) = super::chain_check::chain_problem(&chain, &roots.active_intermediates)
        {
            problems.push(p);
        }
        let serial = tls::serial(leaf);
        if problems.is_empty() {
            Observation::new(true, format!("leaf {serial} for {uri}, chains to {which}"))
        } else {
            Observation::new(false, format!("leaf {serial}: {}", problems.join("; ")))
        }
    }

    async fn observe_upstream(
        &mut self,
        to: &ListenAddr,
        reach: &[String],
        all: bool,
        presented: &str,
    ) -> Observation {
        let tries = if all { (reach.len() * 4).max(6) } else { 1 };
        let mut reached = BTreeSet::new();
        for n in 1..=tries {
            let attempt = probe::upstream_once(to).await;
            if let Err(e) = &attempt.answer {
                let hints: Vec<String> = self
                    .world
                    .instances
                    .iter()
                    .filter_map(|i| i.failures().pop().map(|f| format!("{}: {f}", i.id)))
                    .collect();
                let hint = if hints.is_empty() {
                    String::new()
                } else {
                    format!(" [instances: {}]", hints.join("; "))
                };
                return Observation::new(false, format!("no instance answered: {e}{hint}"));
            }
            let Some((inst, seen)) = self.world.instances.who_saw(&attempt.token) else {
                return Observation::new(
                    false,
                    format!("answer {:?} from no known instance", attempt.answer),
                );
            };
            if !reach.contains(&inst.id) {
                return Observation::new(
                    false,
                    format!("reached {}, not one of {reach:?}", inst.id),
                );
            }
            let svc = seen
                .presented
                .as_deref()
                .and_then(tls::spiffe_service)
                .map(|(_, s)| s);
            if svc.as_deref() != Some(presented) {
                return Observation::new(
                    false,
                    format!("{} saw the proxy present {:?}", inst.id, seen.presented),
                );
            }
            reached.insert(inst.id.clone());
            if !all {
                return Observation::new(true, format!("reached {} as svc/{presented}", inst.id));
            }
            if reach.iter().all(|r| reached.contains(r)) {
                return Observation::new(
                    true,
                    format!("reached all of {reach:?} in {n} connections"),
                );
            }
        }
        Observation::new(
            false,
            format!("reached only {reached:?} in {tries} connections"),
        )
    }
}

/// The `served-leaf` expectations beyond name, root and freshness.
#[derive(Debug, Clone, Copy)]
struct LeafWant<'a> {
    key_type: Option<&'a str>,
    key_bits: Option<u32>,
    full_chain: bool,
}
