//! Unix sockets in the registration: the local application's `LocalServiceSocketPath` and an
//! upstream's `LocalBindSocketPath` / `LocalBindSocketMode`. The mode is read as Consul reads it
//! (`strconv.ParseUint(mode, 0, 32)`: a Go integer literal, so `"0600"` is octal) and must be
//! permission bits (`<= 0o777`, the limit Envoy enforces); a bad mode is a warning and the socket
//! keeps its default mode.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use super::ip_or;
use crate::agent::types::{AgentProxy, AgentUpstream};
use crate::snapshot::{Bind, LocalApp};

/// The largest accepted socket mode (`rwxrwxrwx`).
pub(crate) const MAX_MODE: u32 = 0o777;

/// Why a `LocalBindSocketMode` was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ModeError {
    /// Not a Go unsigned integer literal.
    #[error("{0:?} is not an unsigned integer literal (e.g. \"0600\")")]
    Syntax(String),
    /// Larger than 32 bits (Consul's `ParseUint` bit size).
    #[error("{0:?} is out of range")]
    Range(String),
    /// More than permission bits.
    #[error("{0:#o} is not a permission mode (at most 0o777)")]
    TooLarge(u32),
}

/// Go's `underscoreOK`: underscores only between digits (a base prefix counts as a digit).
fn underscores_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let mut saw = b'^';
    let mut i = 0;
    let mut hex = false;
    if b.len() >= 2 && b[0] == b'0' && matches!(b[1].to_ascii_lowercase(), b'b' | b'o' | b'x') {
        i = 2;
        saw = b'0';
        hex = b[1].eq_ignore_ascii_case(&b'x');
    }
    for &c in &b[i..] {
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else if saw == b'_' {
            return false;
        } else {
            saw = b'!';
        }
    }
    saw != b'_'
}

/// `strconv.ParseUint(s, 0, 32)`: decimal, or `0b`/`0o`/`0x` prefixed, or octal with a leading
/// `0`; underscores between digits.
fn parse_go_uint32(s: &str) -> Result<u32, ModeError> {
    let syntax = || ModeError::Syntax(s.to_owned());
    if s.is_empty() {
        return Err(syntax());
    }
    let lower = s.to_ascii_lowercase();
    let (radix, digits) = if let Some(rest) = lower.strip_prefix("0b").filter(|_| s.len() >= 3) {
        (2, rest)
    } else if let Some(rest) = lower.strip_prefix("0o").filter(|_| s.len() >= 3) {
        (8, rest)
    } else if let Some(rest) = lower.strip_prefix("0x").filter(|_| s.len() >= 3) {
        (16, rest)
    } else if let Some(rest) = lower.strip_prefix('0') {
        (8, rest)
    } else {
        (10, lower.as_str())
    };
    if s.contains('_') && !underscores_ok(s) {
        return Err(syntax());
    }
    let mut value: u64 = 0;
    for c in digits.chars().filter(|c| *c != '_') {
        let d = c.to_digit(radix).ok_or_else(syntax)?;
        value = value * u64::from(radix) + u64::from(d);
        if value > u64::from(u32::MAX) {
            return Err(ModeError::Range(s.to_owned()));
        }
    }
    u32::try_from(value).map_err(|_| ModeError::Range(s.to_owned()))
}

/// A validated socket mode: `Ok(None)` for an empty string or `0` (as in Envoy, no `chmod`).
/// Surrounding whitespace is ignored.
pub(crate) fn parse_mode(s: &str) -> Result<Option<u32>, ModeError> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    match parse_go_uint32(s)? {
        0 => Ok(None),
        m if m > MAX_MODE => Err(ModeError::TooLarge(m)),
        m => Ok(Some(m)),
    }
}

/// The local application: the socket path when set (Consul's app cluster prefers it), else
/// `LocalServiceAddress` (default 127.0.0.1) and `LocalServicePort`.
pub(crate) fn local_app(proxy: &AgentProxy) -> LocalApp {
    if !proxy.local_service_socket_path.is_empty() {
        return LocalApp::Unix(PathBuf::from(&proxy.local_service_socket_path));
    }
    LocalApp::Tcp(SocketAddr::new(
        ip_or(
            &proxy.local_service_address,
            IpAddr::V4(Ipv4Addr::LOCALHOST),
        ),
        proxy.local_service_port,
    ))
}

/// Where upstream `u` listens, as Consul's `makeListener` decides: its socket path when it has
/// no port, else `LocalBindAddress:LocalBindPort`; `None` (logged) when it has neither.
pub(crate) fn upstream_bind(u: &AgentUpstream) -> Option<Bind> {
    let name = u.destination_name.as_str();
    if u.local_bind_port == 0 && !u.local_bind_socket_path.is_empty() {
        let mode = parse_mode(&u.local_bind_socket_mode).unwrap_or_else(|e| {
            tracing::warn!(upstream = %name, mode = %u.local_bind_socket_mode, error = %e,
                "invalid LocalBindSocketMode; the socket keeps its default mode");
            None
        });
        return Some(Bind::Unix {
            path: PathBuf::from(&u.local_bind_socket_path),
            mode,
        });
    }
    if u.local_bind_port == 0 {
        tracing::error!(upstream = %name, "upstream without LocalBindPort or LocalBindSocketPath; skipped");
        return None;
    }
    if !u.local_bind_socket_path.is_empty() {
        tracing::warn!(upstream = %name, path = %u.local_bind_socket_path,
            "upstream has both LocalBindPort and LocalBindSocketPath; listening on the port");
    }
    let ip = ip_or(&u.local_bind_address, IpAddr::V4(Ipv4Addr::LOCALHOST));
    Some(Bind::Tcp(SocketAddr::new(ip, u.local_bind_port)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_like_go_parse_uint_base_0() {
        for (text, want) in [
            ("0600", Some(0o600)),
            ("0700", Some(0o700)),
            ("0o640", Some(0o640)),
            ("0O640", Some(0o640)),
            ("0x1ff", Some(0o777)),
            ("0b110000000", Some(0o600)),
            ("384", Some(0o600)),
            ("0_600", Some(0o600)),
            ("0o6_4_0", Some(0o640)),
            ("0777", Some(0o777)),
            (" 0600 ", Some(0o600)),
            ("", None),
            ("0", None),
            ("00", None),
        ] {
            assert_eq!(parse_mode(text), Ok(want), "{text:?}");
        }
    }

    #[test]
    fn bad_modes_are_rejected() {
        let syntax = |s: &str| Err(ModeError::Syntax(s.into()));
        assert_eq!(parse_mode("0800"), syntax("0800"), "8 is not octal");
        assert_eq!(parse_mode("rw-------"), syntax("rw-------"));
        assert_eq!(parse_mode("-0600"), syntax("-0600"));
        assert_eq!(parse_mode("+384"), syntax("+384"));
        assert_eq!(parse_mode("0x"), syntax("0x"));
        assert_eq!(parse_mode("0_"), syntax("0_"));
        assert_eq!(parse_mode("_0600"), syntax("_0600"));
        assert_eq!(parse_mode("06__00"), syntax("06__00"));
        assert_eq!(
            parse_mode("0o_600"),
            Ok(Some(0o600)),
            "prefix counts as a digit"
        );
        assert_eq!(parse_mode("1000"), Err(ModeError::TooLarge(1000)));
        assert_eq!(
            parse_mode("700"),
            Err(ModeError::TooLarge(700)),
            "decimal 700"
        );
        assert_eq!(parse_mode("01000"), Err(ModeError::TooLarge(0o1000)));
        assert_eq!(
            parse_mode("4294967296"),
            Err(ModeError::Range("4294967296".into()))
        );
        assert_eq!(parse_mode("4294967295"), Err(ModeError::TooLarge(u32::MAX)));
        assert_eq!(
            ModeError::TooLarge(0o1000).to_string(),
            "0o1000 is not a permission mode (at most 0o777)"
        );
    }

    fn upstream(v: serde_json::Value) -> AgentUpstream {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn upstream_binds_follow_consul() {
        let sock = upstream(serde_json::json!({"DestinationName":"db",
            "LocalBindSocketPath":"/tmp/db.sock","LocalBindSocketMode":"0600"}));
        assert_eq!(
            upstream_bind(&sock),
            Some(Bind::Unix {
                path: "/tmp/db.sock".into(),
                mode: Some(0o600)
            })
        );
        let bad = upstream(serde_json::json!({"DestinationName":"db",
            "LocalBindSocketPath":"/tmp/db.sock","LocalBindSocketMode":"0999"}));
        assert_eq!(
            upstream_bind(&bad),
            Some(Bind::Unix {
                path: "/tmp/db.sock".into(),
                mode: None
            }),
            "bad mode: default"
        );
        let null_mode = upstream(serde_json::json!({"DestinationName":"db",
            "LocalBindSocketPath":"/tmp/db.sock","LocalBindSocketMode":null}));
        assert!(matches!(
            upstream_bind(&null_mode),
            Some(Bind::Unix { mode: None, .. })
        ));
        let both = upstream(
            serde_json::json!({"DestinationName":"db","LocalBindPort":9000,
            "LocalBindSocketPath":"/tmp/db.sock"}),
        );
        assert_eq!(
            upstream_bind(&both),
            Some(Bind::Tcp("127.0.0.1:9000".parse().unwrap())),
            "the port wins"
        );
        let neither =
            upstream(serde_json::json!({"DestinationName":"db","LocalBindSocketPath":null}));
        assert_eq!(upstream_bind(&neither), None);
    }

    #[test]
    fn the_local_app_socket_replaces_address_and_port() {
        let proxy: AgentProxy = serde_json::from_value(serde_json::json!({
            "DestinationServiceName":"api","LocalServiceSocketPath":"/run/api.sock"}))
        .unwrap();
        assert_eq!(local_app(&proxy), LocalApp::Unix("/run/api.sock".into()));
        let tcp: AgentProxy = serde_json::from_value(serde_json::json!({
            "DestinationServiceName":"api","LocalServiceAddress":"127.0.0.2",
            "LocalServicePort":8080,"LocalServiceSocketPath":null}))
        .unwrap();
        assert_eq!(
            local_app(&tcp),
            LocalApp::Tcp("127.0.0.2:8080".parse().unwrap())
        );
        let neither: AgentProxy =
            serde_json::from_value(serde_json::json!({"DestinationServiceName":"api"})).unwrap();
        assert_eq!(
            local_app(&neither).to_string(),
            "127.0.0.1:0",
            "as before: port 0"
        );
    }
}
