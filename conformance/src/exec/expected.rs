//! What a correct proxy shows, in words, for each check (the `expected` of a check result).

use std::time::Duration;

use scenarios::{
    Check, Expectation, Identity, InboundVia, Outcome as Expected, OutsideTarget, RootRef,
    UpstreamVia,
};

use super::checks::Within;
use super::describe_identity;

/// What a correct proxy shows, in words.
pub(super) fn expected(
    exp: &Expectation,
    within: Option<Within>,
    stable: Option<Duration>,
) -> String {
    let mut text = match &exp.check {
        Check::TlsHandshake {
            identity,
            tls_version,
            cipher_suites,
            outcome,
            negotiated_cipher,
        } => {
            let offer = match (tls_version.as_deref(), cipher_suites.is_empty()) {
                (Some(v), true) => format!("only TLS {v}"),
                (Some(v), false) => format!("only TLS {v} with {}", cipher_suites.join(", ")),
                (None, true) => "TLS 1.2 and 1.3".to_owned(),
                (None, false) => format!("TLS 1.3, and TLS 1.2 with {}", cipher_suites.join(", ")),
            };
            match (outcome, negotiated_cipher) {
                (Expected::Allowed, Some(c)) => format!(
                    "{} offering {offer} completes the handshake on {c}",
                    describe_identity(identity)
                ),
                (Expected::Allowed, None) => format!(
                    "{} offering {offer} completes the handshake",
                    describe_identity(identity)
                ),
                (Expected::Refused, _) => format!(
                    "{} offering {offer} is refused at the handshake",
                    describe_identity(identity)
                ),
            }
        }
        Check::Inbound {
            identity,
            outcome,
            via: InboundVia::PublicListener,
        } => match outcome {
            Expected::Allowed => format!(
                "{}'s bytes reach the app and come back",
                describe_identity(identity)
            ),
            Expected::Refused => format!(
                "{} refused (handshake fails or the connection closes before any byte reaches the app)",
                describe_identity(identity)
            ),
        },
        Check::Inbound {
            identity,
            outcome,
            via: InboundVia::AppPort,
        } => match (outcome, identity) {
            (Expected::Allowed, _) => format!(
                "a dial of the app's own port from outside the pod, as {}, is captured by the \
                 proxy and its bytes reach the app",
                describe_identity(identity)
            ),
            (Expected::Refused, Identity::NoCert) => "a plain, unauthenticated dial of the app's \
                 own port from outside the pod is captured by the proxy and refused: no byte \
                 reaches the app"
                .to_owned(),
            (Expected::Refused, _) => format!(
                "a dial of the app's own port from outside the pod, as {}, is captured and \
                 refused before any byte reaches the app",
                describe_identity(identity)
            ),
        },
        Check::Inbound {
            identity,
            outcome,
            via: InboundVia::ExcludedPort,
        } => match outcome {
            Expected::Allowed => format!(
                "a dial of the pod's excluded port from outside, as {}, bypasses the proxy and \
                 reaches the plain server there",
                describe_identity(identity)
            ),
            Expected::Refused => format!(
                "a dial of the pod's excluded port from outside, as {}, reaches nothing there",
                describe_identity(identity)
            ),
        },
        Check::UnknownDestination {
            outcome,
            to: to @ (OutsideTarget::ExcludedPort | OutsideTarget::ExcludedCidr),
            ..
        } => {
            let what = match to {
                OutsideTarget::ExcludedPort => "a server outside the pod on the excluded port",
                _ => "a server outside the pod on the excluded address",
            };
            match outcome {
                Expected::Allowed => format!(
                    "the app's dial of {what} bypasses the proxy and reaches it (the proxy \
                     refuses addresses no service owns, so only a bypass gets there)"
                ),
                Expected::Refused => format!("the app's dial of {what} reaches nothing"),
            }
        }
        Check::UnknownDestination {
            outcome,
            as_excluded_uid: true,
            ..
        } => match outcome {
            Expected::Allowed => "a dial by a process of the excluded UID of an address no \
                 service owns bypasses the proxy and reaches it"
                .to_owned(),
            Expected::Refused => "a dial by a process of the excluded UID of an address no \
                 service owns reaches nothing"
                .to_owned(),
        },
        Check::UnknownDestination { outcome, .. } => match outcome {
            Expected::Refused => "the app's dial of an address no service owns is refused: \
                 nothing reaches it or any instance"
                .to_owned(),
            Expected::Allowed => {
                "the app's dial of an address no service owns is passed through to it".to_owned()
            }
        },
        Check::NoRedirectLoop => "while the app holds one captured connection, the outbound \
             listener has accepted only that one (the proxy's own dial is not captured), and \
             it reaches an instance"
            .to_owned(),
        Check::Http {
            identity,
            conn,
            method,
            path,
            status,
            streams,
            app_path,
            app_headers,
            app_without,
            ..
        } => {
            let who = match (conn, identity) {
                (Some(c), _) => format!("on connection {c}"),
                (None, Some(i)) => format!("as {}", describe_identity(i)),
                (None, None) => String::new(),
            };
            let many = match streams {
                Some(n) if *n > 1 => format!(", on each of {n} concurrent streams"),
                _ => String::new(),
            };
            let app = match app_path {
                Some(p) => format!(", the app receiving {p}"),
                None if !(200..300).contains(status) => ", the app receiving nothing".to_owned(),
                None => String::new(),
            };
            let mut seen = String::new();
            if !app_headers.is_empty() {
                let list: Vec<String> = app_headers
                    .iter()
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect();
                seen.push_str(&format!(", the app receiving exactly {}", list.join(", ")));
            }
            if !app_without.is_empty() {
                seen.push_str(&format!(", and no {}", app_without.join(", ")));
            }
            format!(
                "{} {path} {who} answers HTTP {status}{many}{app}{seen}",
                method.as_deref().unwrap_or("GET")
            )
        }
        Check::Grpc {
            identity,
            conn,
            upstream,
            path,
            code,
            trailers,
            streams,
            ..
        } => {
            let who = match (conn, upstream, identity) {
                (Some(c), _, _) => format!("on HTTP/2 connection {c}"),
                (None, Some(u), _) => {
                    format!(
                        "from the app through upstream {u}'s listener, to an instance over mTLS,"
                    )
                }
                (None, None, Some(i)) => format!("as {}", describe_identity(i)),
                _ => String::new(),
            };
            let mut t = format!("gRPC {path} {who} ends with grpc-status {code}");
            if !trailers.is_empty() {
                let kv: Vec<String> = trailers.iter().map(|(k, v)| format!("{k}={v}")).collect();
                t.push_str(&format!(" and trailers {}", kv.join(" ")));
            }
            if let Some(n) = streams.filter(|n| *n > 1) {
                t.push_str(&format!(", on each of {n} concurrent streams"));
            }
            t
        }
        Check::ConnOpen { conn } => format!("connection {conn} still carries bytes both ways"),
        Check::ConnClosed { conn } => format!("connection {conn} closed by the proxy"),
        Check::ServedLeaf {
            service,
            root,
            differs_from_mark,
            key_type,
            key_bits,
            full_chain,
        } => {
            let r = match root {
                RootRef::Active => "the active root",
                RootRef::AnyListed => "a listed root",
            };
            let mut t = format!("serves a leaf for svc/{service} chaining to {r}");
            if let Some(m) = differs_from_mark {
                t.push_str(&format!(", not the one served at {m}"));
            }
            if key_type.is_some() || key_bits.is_some() {
                t.push_str(&format!(
                    ", with a {}{} key",
                    key_type.as_deref().unwrap_or("any"),
                    key_bits.map(|b| format!("-{b}")).unwrap_or_default()
                ));
            }
            if *full_chain {
                t.push_str(", presented with the active root's IntermediateCerts after it");
            }
            t
        }
        Check::Upstream {
            upstream,
            reach,
            all,
            presented,
            via,
        } => format!(
            "bytes to upstream {upstream}{} reach {} of {reach:?}, presenting svc/{presented}",
            match via {
                UpstreamVia::Listener => "",
                UpstreamVia::VirtualIp => " (the app dials its virtual IP)",
            },
            if *all { "every one" } else { "one" }
        ),
        Check::UpstreamRefused { upstream } => {
            format!("no byte through upstream {upstream} reaches any instance")
        }
        Check::ListenerOpen { upstream } => {
            format!("the local listener of upstream {upstream} accepts connections")
        }
        Check::AgentUsage {
            token_on_every_request,
            blocking,
            max_requests_per_minute,
        } => {
            let mut parts = Vec::new();
            if *token_on_every_request {
                parts.push("the token on every request".to_owned());
            }
            if !blocking.is_empty() {
                parts.push(format!("blocking queries for {}", blocking.join(", ")));
            }
            if let Some(m) = max_requests_per_minute {
                parts.push(format!("at most {m} requests/min"));
            }
            format!("agent usage: {}", parts.join(", "))
        }
        Check::Request(c) => super::route::expected::request(c),
        Check::Spread(c) => super::route::expected::spread(c),
        Check::Burst(c) => super::route::expected::burst(c),
        Check::IndexResetHonoured => {
            "after the index reset the proxy sends a smaller index and keeps blocking".into()
        }
        Check::AuthorizeSerial => {
            "every authorize call of the proxy names the client certificate's serial \
             (ClientCertSerial)"
                .into()
        }
        Check::ProxyLog { contains } => format!(
            "a line of the proxy's output contains one of {}",
            contains
                .iter()
                .map(|t| format!("{t:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    if let (Some(w), Some(name)) = (within, &exp.within) {
        text.push_str(&format!(" within {name} ({} ms)", w.bound.as_millis()));
    }
    if let Some(s) = stable {
        text.push_str(&format!(", then for {} ms", s.as_millis()));
    }
    text
}
