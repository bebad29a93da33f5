//! Validation of the `l7-traffic` vocabulary: instance answers, `open-upstream` connections,
//! and the `request`, `spread` and `burst` checks.

use crate::error::{FieldError, FieldPath};
use crate::model::{Answer, BurstCheck, InstanceSpec, RequestCheck, SpreadCheck};

use super::fields::go_duration;
use super::steps::{State, known_instance, present_upstream, unknown_conn};

/// The most requests one `spread` or `burst` check may send.
const MAX_REQUESTS: u32 = 2000;

/// An instance's answer; `live` for an `instance` step (no `blackhole` there).
pub(super) fn check_answer(at: &FieldPath, a: &Answer, live: bool) -> Result<(), FieldError> {
    if let Some(s) = a.status
        && !(100..=599).contains(&s)
    {
        return Err(FieldError::new(at.key("status"), "not an HTTP status"));
    }
    if a.first.is_some() && a.status.is_none() {
        return Err(FieldError::new(
            at.key("first"),
            "`first` goes with `status`",
        ));
    }
    if let Some(d) = &a.delay {
        go_duration(&at.key("delay"), d)?;
    }
    if live && a.blackhole {
        return Err(FieldError::new(
            at.key("blackhole"),
            "`blackhole` is for `[[setup.instances]]` only",
        ));
    }
    let modes = [a.reset, a.refuse, a.blackhole]
        .iter()
        .filter(|b| **b)
        .count();
    if modes > 1 {
        return Err(FieldError::new(
            at.clone(),
            "give at most one of `reset`, `refuse`, `blackhole`",
        ));
    }
    Ok(())
}

/// An `app` step: only `delay` (for an HTTP-family app) or `blackhole` (for a loopback TCP
/// app), not both.
pub(super) fn check_app_answer(
    at: &FieldPath,
    a: &Answer,
    s: &crate::model::Scenario,
) -> Result<(), FieldError> {
    if a.status.is_some() || a.first.is_some() || a.reset || a.refuse {
        return Err(FieldError::new(
            at.clone(),
            "the local app takes only `delay` and `blackhole`",
        ));
    }
    if let Some(d) = &a.delay {
        go_duration(&at.key("delay"), d)?;
        if !matches!(s.setup.protocol.as_deref(), Some("http" | "http2" | "grpc")) {
            return Err(FieldError::new(
                at.key("delay"),
                "`delay` needs an HTTP app: set `setup.protocol` to http, http2 or grpc",
            ));
        }
        if a.blackhole {
            return Err(FieldError::new(
                at.clone(),
                "give `delay` or `blackhole`, not both",
            ));
        }
    }
    if a.blackhole && (s.setup.app_socket || s.setup.transparent.is_some()) {
        return Err(FieldError::new(
            at.key("blackhole"),
            "`blackhole` needs the app on a loopback TCP port (no `app_socket`, no transparent mode)",
        ));
    }
    Ok(())
}

/// An instance with an `answer` must speak HTTP.
pub(super) fn check_instance_answer(at: &FieldPath, i: &InstanceSpec) -> Result<(), FieldError> {
    check_answer(&at.key("answer"), &i.answer, false)?;
    let http = matches!(i.protocol.as_deref(), Some("http" | "http2" | "grpc"));
    if i.answer != Answer::default() && !http {
        return Err(FieldError::new(
            at.key("answer"),
            "`answer` needs an HTTP instance (`protocol` http, http2 or grpc)",
        ));
    }
    Ok(())
}

pub(super) fn check_request(
    at: &FieldPath,
    c: &RequestCheck,
    st: &State<'_>,
) -> Result<(), FieldError> {
    present_upstream(&at.key("upstream"), &c.upstream, st)?;
    if let Some(conn) = &c.conn {
        match st.upstream_conns.get(conn.as_str()) {
            None => return Err(unknown_conn(&at.key("conn"), conn)),
            Some(u) if *u != c.upstream => {
                return Err(FieldError::new(
                    at.key("conn"),
                    format!("connection {conn:?} goes to upstream {u:?}"),
                ));
            }
            Some(_) => {}
        }
    }
    path(&at.key("path"), &c.path)?;
    if let Some(p) = &c.received_path {
        path(&at.key("received_path"), p)?;
    }
    if let Some(reach) = &c.reach {
        for (i, r) in reach.iter().enumerate() {
            known_instance(&at.key("reach").index(i), r, st)?;
        }
    }
    if let (Some(lo), Some(hi)) = (c.min_ms, c.max_ms)
        && lo > hi
    {
        return Err(FieldError::new(at.key("min_ms"), "greater than `max_ms`"));
    }
    Ok(())
}

pub(super) fn check_spread(
    at: &FieldPath,
    c: &SpreadCheck,
    st: &State<'_>,
) -> Result<(), FieldError> {
    present_upstream(&at.key("upstream"), &c.upstream, st)?;
    path(&at.key("path"), &c.path)?;
    count(&at.key("requests"), c.requests)?;
    for (key, shares) in [("expect", &c.expect), ("at_least", &c.at_least)] {
        for (id, share) in shares {
            known_instance(&at.key(key).key(id), id, st)?;
            if !(0.0..=100.0).contains(share) {
                return Err(FieldError::new(
                    at.key(key).key(id),
                    "a percentage, 0 to 100",
                ));
            }
        }
    }
    let sum: f64 = c.expect.values().sum();
    if !c.expect.is_empty() && (sum - 100.0).abs() > 0.01 {
        return Err(FieldError::new(
            at.key("expect"),
            format!("the shares sum to {sum}, not 100"),
        ));
    }
    if (c.sticky || c.keys.is_some()) && c.vary_header.is_none() {
        return Err(FieldError::new(
            at.key("vary_header"),
            "`sticky` and `keys` need `vary_header`",
        ));
    }
    if c.concurrency == Some(0) || c.keys == Some(0) {
        return Err(FieldError::new(
            at.clone(),
            "`concurrency` and `keys` are at least 1",
        ));
    }
    if c.expect.is_empty() && c.at_least.is_empty() && !c.sticky {
        return Err(FieldError::new(
            at.clone(),
            "a spread check needs `expect`, `at_least` or `sticky`",
        ));
    }
    Ok(())
}

pub(super) fn check_burst(
    at: &FieldPath,
    c: &BurstCheck,
    st: &State<'_>,
) -> Result<(), FieldError> {
    present_upstream(&at.key("upstream"), &c.upstream, st)?;
    path(&at.key("path"), &c.path)?;
    count(&at.key("requests"), c.requests)?;
    if c.ok > c.requests {
        return Err(FieldError::new(at.key("ok"), "more than `requests`"));
    }
    Ok(())
}

fn path(at: &FieldPath, p: &str) -> Result<(), FieldError> {
    if p.starts_with('/') && !p.contains(char::is_whitespace) {
        Ok(())
    } else {
        Err(FieldError::new(at.clone(), format!("{p:?} is not a path")))
    }
}

fn count(at: &FieldPath, n: u32) -> Result<(), FieldError> {
    if (1..=MAX_REQUESTS).contains(&n) {
        Ok(())
    } else {
        Err(FieldError::new(at.clone(), format!("1 to {MAX_REQUESTS}")))
    }
}
