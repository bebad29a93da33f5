//! Validation of checks and probe identities against what exists at their point of the
//! timeline.

use crate::error::{FieldError, FieldPath};
use crate::model::{
    Check, ConnProtocol, Exclusion, Identity, InboundVia, Outcome, OutsideTarget, UpstreamVia,
};
use crate::names::BLOCKING_FAMILIES;

use super::steps::{State, known_instance, present_upstream, unknown_conn};
use super::{one_of, service_name};

pub(super) fn check_check(at: &FieldPath, check: &Check, st: &State<'_>) -> Result<(), FieldError> {
    match check {
        Check::Inbound { identity, via, .. } => {
            if *via == InboundVia::AppPort {
                needs_transparent(&at.key("via"), st, "via = \"app-port\"")?;
            }
            if *via == InboundVia::ExcludedPort {
                needs_exclusion(&at.key("via"), st, Exclusion::InboundPort, "excluded-port")?;
            }
            check_identity(&at.key("identity"), identity, st)
        }
        Check::TlsHandshake {
            identity,
            tls_version,
            outcome,
            negotiated_cipher,
            ..
        } => {
            if let Some(v) = tls_version
                && !matches!(v.as_str(), "1.2" | "1.3")
            {
                return Err(FieldError::new(
                    at.key("tls_version"),
                    format!("{v:?}: offer \"1.2\" or \"1.3\""),
                ));
            }
            if negotiated_cipher.is_some() && *outcome != Outcome::Allowed {
                return Err(FieldError::new(
                    at.key("negotiated_cipher"),
                    "goes with `outcome = \"allowed\"`",
                ));
            }
            check_identity(&at.key("identity"), identity, st)
        }
        Check::UnknownDestination {
            to,
            as_excluded_uid,
            ..
        } => {
            needs_transparent(at, st, "unknown-destination")?;
            if *as_excluded_uid {
                needs_exclusion(
                    &at.key("as_excluded_uid"),
                    st,
                    Exclusion::Uid,
                    "as_excluded_uid",
                )?;
            }
            match to {
                OutsideTarget::Outside => Ok(()),
                OutsideTarget::ExcludedPort => {
                    needs_exclusion(&at.key("to"), st, Exclusion::OutboundPort, "excluded-port")
                }
                OutsideTarget::ExcludedCidr => {
                    needs_exclusion(&at.key("to"), st, Exclusion::OutboundCidr, "excluded-cidr")
                }
            }
        }
        Check::NoRedirectLoop => {
            needs_transparent(at, st, "no-redirect-loop")?;
            if st.implicit.is_empty() {
                return Err(FieldError::new(
                    at.clone(),
                    "no-redirect-loop dials the first implicit upstream's virtual IP; list one \
                     in `setup.upstreams` with `implicit = true`",
                ));
            }
            Ok(())
        }
        Check::Http {
            identity,
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
        } => {
            super::app_seen::check_app_seen(at, *status, jwt.as_ref(), app_headers, app_without)?;
            if let Some(t) = jwt
                && !st.jwt_providers.contains(t.provider.as_str())
            {
                return Err(FieldError::new(
                    at.key("jwt").key("provider"),
                    format!("{:?} is not in `setup.jwt_providers`", t.provider),
                ));
            }
            if let Some(p) = app_path {
                if conn.is_some() || !(200..300).contains(status) {
                    return Err(FieldError::new(
                        at.key("app_path"),
                        "`app_path` goes with a 2xx `status` on a new connection (`identity`, \
                         no `conn`)",
                    ));
                }
                if !p.starts_with('/') || p.contains('?') {
                    return Err(FieldError::new(
                        at.key("app_path"),
                        format!("{p:?} is not a path (starts with `/`, no query)"),
                    ));
                }
            }
            match (identity, conn) {
                (None, None) => {
                    return Err(FieldError::new(
                        at.clone(),
                        "an http check needs `identity` (a new connection) or `conn`",
                    ));
                }
                (Some(_), Some(_)) => {
                    return Err(FieldError::new(
                        at.key("identity"),
                        "give `identity` or `conn`, not both (a connection has its identity)",
                    ));
                }
                (Some(id), None) => check_identity(&at.key("identity"), id, st)?,
                (None, Some(c)) => match st.conns.get(c.as_str()) {
                    Some(p) if p.is_http2() => {}
                    Some(ConnProtocol::Http) => {
                        if streams.is_some_and(|n| n > 1) {
                            return Err(FieldError::new(
                                at.key("streams"),
                                format!(
                                    "connection {c:?} is HTTP/1.1: one request at a time (open \
                                     it with protocol = \"http2\" for concurrent streams)"
                                ),
                            ));
                        }
                    }
                    Some(_) => {
                        return Err(FieldError::new(
                            at.key("conn"),
                            format!(
                                "connection {c:?} was opened with protocol \"tcp\", not \"http\""
                            ),
                        ));
                    }
                    None => return Err(unknown_conn(&at.key("conn"), c)),
                },
            }
            if let Some(m) = method
                && (m.is_empty() || !m.bytes().all(|b| b.is_ascii_uppercase()))
            {
                return Err(FieldError::new(
                    at.key("method"),
                    format!("{m:?} is not an HTTP method (upper case letters)"),
                ));
            }
            if !path.starts_with('/') {
                return Err(FieldError::new(at.key("path"), "must start with '/'"));
            }
            for name in headers.keys() {
                // `_` included: header names with underscores are legal (RFC 9110 tchar) and
                // what the mesh entry's `HeadersWithUnderscoresAction` is about.
                let ok = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
                if name.is_empty() || !name.bytes().all(ok) {
                    return Err(FieldError::new(
                        at.key("headers").key(name),
                        "not an HTTP header name",
                    ));
                }
            }
            if !(100..=599).contains(status) {
                return Err(FieldError::new(at.key("status"), "not an HTTP status"));
            }
            check_streams(at, *streams, conn.is_some())
        }
        Check::Grpc {
            identity,
            conn,
            upstream,
            path,
            metadata,
            code,
            trailers,
            streams,
        } => {
            match (identity, conn, upstream) {
                (Some(id), None, None) => check_identity(&at.key("identity"), id, st)?,
                (None, Some(c), None) => match st.conns.get(c.as_str()) {
                    Some(p) if p.is_http2() => {}
                    Some(p) => {
                        return Err(FieldError::new(
                            at.key("conn"),
                            format!(
                                "connection {c:?} was opened with protocol {:?}; a grpc check \
                                 needs \"grpc\" or \"http2\"",
                                format!("{p:?}").to_lowercase()
                            ),
                        ));
                    }
                    None => return Err(unknown_conn(&at.key("conn"), c)),
                },
                (None, None, Some(u)) => present_upstream(&at.key("upstream"), u, st)?,
                _ => {
                    return Err(FieldError::new(
                        at.clone(),
                        "a grpc check needs exactly one of `identity` (a new connection), \
                         `conn` (an open HTTP/2 connection) or `upstream` (from the app)",
                    ));
                }
            }
            if !grpc_path(path) {
                return Err(FieldError::new(
                    at.key("path"),
                    format!("{path:?} is not a gRPC method path (/package.Service/Method)"),
                ));
            }
            for (key, map) in [("metadata", metadata), ("trailers", trailers)] {
                for name in map.keys() {
                    if name.is_empty()
                        || !name
                            .bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    {
                        return Err(FieldError::new(
                            at.key(key).key(name),
                            "not a gRPC metadata name (lower case letters, digits, '-')",
                        ));
                    }
                }
            }
            if *code > 16 {
                return Err(FieldError::new(
                    at.key("code"),
                    "not a gRPC status code (0 to 16)",
                ));
            }
            check_streams(at, *streams, conn.is_some() || upstream.is_some())
        }
        Check::ConnOpen { conn } | Check::ConnClosed { conn } => {
            if st.conns.contains_key(conn.as_str()) {
                Ok(())
            } else {
                Err(unknown_conn(&at.key("conn"), conn))
            }
        }
        Check::ServedLeaf {
            service,
            differs_from_mark,
            ..
        } => {
            service_name(&at.key("service"), service)?;
            if let Some(m) = differs_from_mark
                && !st.marks.contains(m.as_str())
                && !st.issued.contains(m.as_str())
            {
                return Err(FieldError::new(
                    at.key("differs_from_mark"),
                    format!("no earlier `mark` or `issue` step is named {m:?}"),
                ));
            }
            Ok(())
        }
        Check::Upstream {
            upstream,
            reach,
            presented,
            via,
            ..
        } => {
            if *via == UpstreamVia::VirtualIp {
                needs_transparent(&at.key("via"), st, "via = \"virtual-ip\"")?;
                implicit_upstream(&at.key("upstream"), upstream, st)?;
            } else {
                present_upstream(&at.key("upstream"), upstream, st)?;
            }
            if reach.is_empty() {
                return Err(FieldError::new(
                    at.key("reach"),
                    "list at least one instance",
                ));
            }
            for (i, r) in reach.iter().enumerate() {
                known_instance(&at.key("reach").index(i), r, st)?;
            }
            service_name(&at.key("presented"), presented)
        }
        Check::Request(c) => super::route::check_request(at, c, st),
        Check::Spread(c) => super::route::check_spread(at, c, st),
        Check::Burst(c) => super::route::check_burst(at, c, st),
        Check::UpstreamRefused { upstream } | Check::ListenerOpen { upstream } => {
            present_upstream(&at.key("upstream"), upstream, st)
        }
        Check::AgentUsage {
            token_on_every_request,
            blocking,
            max_requests_per_minute,
        } => {
            for (i, b) in blocking.iter().enumerate() {
                one_of(&at.key("blocking").index(i), b, BLOCKING_FAMILIES)?;
                if blocking[..i].contains(b) {
                    return Err(FieldError::new(
                        at.key("blocking").index(i),
                        format!("{b:?} is listed twice"),
                    ));
                }
            }
            if *max_requests_per_minute == Some(0) {
                return Err(FieldError::new(
                    at.key("max_requests_per_minute"),
                    "must be at least 1",
                ));
            }
            if !token_on_every_request && blocking.is_empty() && max_requests_per_minute.is_none() {
                return Err(FieldError::new(
                    at.clone(),
                    "an agent-usage check must check something: set token_on_every_request, \
                     blocking or max_requests_per_minute",
                ));
            }
            Ok(())
        }
        Check::AuthorizeSerial => Ok(()),
        Check::ProxyLog { contains } => {
            if contains.is_empty() {
                return Err(FieldError::new(
                    at.key("contains"),
                    "list at least one text a line of the proxy's output must contain",
                ));
            }
            match contains.iter().position(|t| t.trim().is_empty()) {
                Some(i) => Err(FieldError::new(
                    at.key("contains").index(i),
                    "an empty text matches every line; write what the line must say",
                )),
                None => Ok(()),
            }
        }
        Check::IndexResetHonoured => {
            if st.index_reset {
                Ok(())
            } else {
                Err(FieldError::new(
                    at.clone(),
                    "index-reset-honoured needs an earlier `index-reset` or `restart-agent` step",
                ))
            }
        }
    }
}

/// `streams` is 1 to 100, and more than 1 only on a named connection.
fn check_streams(at: &FieldPath, streams: Option<u32>, on_conn: bool) -> Result<(), FieldError> {
    match streams {
        None | Some(1) => Ok(()),
        Some(0) | Some(101..) => Err(FieldError::new(at.key("streams"), "must be 1 to 100")),
        Some(_) if !on_conn => Err(FieldError::new(
            at.key("streams"),
            "concurrent streams need one HTTP/2 connection: `conn` (or, for grpc, `upstream`)",
        )),
        Some(_) => Ok(()),
    }
}

/// `/package.Service/Method`: two non-empty segments of name characters.
fn grpc_path(path: &str) -> bool {
    let ok = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_')
    };
    path.strip_prefix('/')
        .and_then(|p| p.split_once('/'))
        .is_some_and(|(svc, method)| ok(svc) && ok(method))
}

/// The upstream a virtual-IP dial names must be implicit: Consul gives an upstream with a
/// local listener no filter chain on the outbound listener (`agent/xds/listeners.go`: "Avoid
/// creating filter chains below for upstreams that have dedicated listeners").
fn implicit_upstream(at: &FieldPath, name: &str, st: &State<'_>) -> Result<(), FieldError> {
    if st.implicit.contains(name) {
        return Ok(());
    }
    let why = if st.upstreams.contains(name) || st.pending_upstreams.contains(name) {
        format!(
            "upstream {name:?} is explicit: Consul gives an upstream with its own listener no \
             filter chain on the outbound listener, so its virtual IP is not captured; mark it \
             `implicit = true`"
        )
    } else {
        format!("no upstream {name:?} in `setup.upstreams`")
    };
    Err(FieldError::new(at.clone(), why))
}

/// `target` names a target made for `exclusion`, which the setup must list.
fn needs_exclusion(
    at: &FieldPath,
    st: &State<'_>,
    exclusion: Exclusion,
    target: &str,
) -> Result<(), FieldError> {
    needs_transparent(at, st, target)?;
    if st.exclude.contains(&exclusion) {
        return Ok(());
    }
    let name = match exclusion {
        Exclusion::InboundPort => "inbound-port",
        Exclusion::OutboundPort => "outbound-port",
        Exclusion::OutboundCidr => "outbound-cidr",
        Exclusion::Uid => "uid",
    };
    Err(FieldError::new(
        at.clone(),
        format!("{target:?} needs `exclude = [\"{name}\"]` in `[setup.transparent]`"),
    ))
}

fn needs_transparent(at: &FieldPath, st: &State<'_>, what: &str) -> Result<(), FieldError> {
    if st.transparent {
        Ok(())
    } else {
        Err(FieldError::new(
            at.clone(),
            format!("{what} needs transparent mode (a `[setup.transparent]` table)"),
        ))
    }
}

pub(super) fn check_identity(
    at: &FieldPath,
    id: &Identity,
    st: &State<'_>,
) -> Result<(), FieldError> {
    match id {
        Identity::Service { service }
        | Identity::UntrustedCa { service }
        | Identity::ForeignTrustDomain { service }
        | Identity::Expired { service }
        | Identity::SelfSigned { service } => service_name(&at.key("service"), service),
        Identity::Named { name } => {
            if st.issued.contains(name.as_str()) {
                Ok(())
            } else {
                Err(FieldError::new(
                    at.key("name"),
                    format!("no earlier `issue` step is named {name:?}"),
                ))
            }
        }
        Identity::CommonNameMismatch {
            common_name,
            service,
        } => {
            service_name(&at.key("common_name"), common_name)?;
            service_name(&at.key("service"), service)?;
            if common_name == service {
                return Err(FieldError::new(
                    at.key("common_name"),
                    "a mismatch needs a CN different from the URI SAN's service",
                ));
            }
            Ok(())
        }
        Identity::NoSpiffe | Identity::AgentId | Identity::NoCert => Ok(()),
    }
}
