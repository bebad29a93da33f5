//! What a correct proxy shows, in words, for the `l7-traffic` checks.

use scenarios::{AppProtocol, BurstCheck, RequestCheck, SpreadCheck};

/// A `request` check in words.
pub(in crate::exec) fn request(c: &RequestCheck) -> String {
    let how = match &c.conn {
        Some(n) => format!("on connection {n}"),
        None => format!("{:?}", c.protocol).to_lowercase(),
    };
    let default = if c.protocol == AppProtocol::Grpc && c.conn.is_none() {
        "POST"
    } else {
        "GET"
    };
    let mut t = format!(
        "{} {} through upstream {} ({how}) answers {}",
        c.method.as_deref().unwrap_or(default),
        c.path,
        c.upstream,
        c.status
    );
    if let Some(g) = c.grpc_status {
        t.push_str(&format!(" grpc-status {g}"));
    }
    match &c.reach {
        Some(r) if r.is_empty() => t.push_str(", from the proxy itself"),
        Some(r) => t.push_str(&format!(", from one of {r:?}")),
        None => {}
    }
    if let Some(p) = &c.received_path {
        t.push_str(&format!(", the instance receiving {p}"));
    }
    if !c.received_headers.is_empty() {
        t.push_str(&format!(" with headers {:?}", c.received_headers));
    }
    if !c.received_without.is_empty() {
        t.push_str(&format!(" without {:?}", c.received_without));
    }
    if !c.response_headers.is_empty() {
        t.push_str(&format!(
            ", the app getting headers {:?}",
            c.response_headers
        ));
    }
    if !c.response_without.is_empty() {
        t.push_str(&format!(", the app not getting {:?}", c.response_without));
    }
    if let Some(n) = c.attempts {
        t.push_str(&format!(", after exactly {n} attempt(s)"));
    }
    match (c.min_ms, c.max_ms) {
        (Some(lo), Some(hi)) => t.push_str(&format!(", in {lo}..{hi} ms")),
        (None, Some(hi)) => t.push_str(&format!(", within {hi} ms")),
        (Some(lo), None) => t.push_str(&format!(", not before {lo} ms")),
        (None, None) => {}
    }
    t
}

/// A `spread` check in words.
pub(in crate::exec) fn spread(c: &SpreadCheck) -> String {
    let mut t = format!(
        "{} requests {} through upstream {} ({} at once) all answer 200",
        c.requests,
        c.path,
        c.upstream,
        c.concurrency.unwrap_or(1)
    );
    if !c.expect.is_empty() {
        t.push_str(&format!(
            ", spread {:?} (percent, binomial bound ±5σ)",
            c.expect
        ));
    }
    if !c.at_least.is_empty() {
        t.push_str(&format!(", at least {:?} (percent)", c.at_least));
    }
    if c.sticky {
        t.push_str(&format!(
            ", each {} value always reaching one instance, the values reaching several",
            c.vary_header.as_deref().unwrap_or("header")
        ));
    }
    t
}

/// A `burst` check in words.
pub(in crate::exec) fn burst(c: &BurstCheck) -> String {
    format!(
        "{} requests at once through upstream {}: {} answer 200, the rest {}",
        c.requests, c.upstream, c.ok, c.rejected
    )
}
