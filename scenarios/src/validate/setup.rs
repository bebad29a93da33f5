//! Validation of what a scenario sets up (`[setup]`): leaf TTL, CA, protocol, transparent
//! mode, upstreams and their sockets, instances, intentions (as Consul validates them) and
//! config entries; the instance, intention, config-entry and CA-key rules are shared with the
//! steps that write them.

use serde_json::Value;

use super::fields::{go_duration, intention_end, one_of, service_name};
use crate::error::{FieldError, FieldPath};
use crate::model::{IntentionSpec, Setup};
use crate::names::{HEALTH_STATUSES, L7_PROTOCOLS, PROTOCOLS};

pub(super) fn check_setup(at: &FieldPath, setup: &Setup) -> Result<(), FieldError> {
    if let Some(ttl) = &setup.leaf_ttl {
        let d = go_duration(&at.key("leaf_ttl"), ttl)?;
        if d < std::time::Duration::from_secs(1) {
            return Err(FieldError::new(at.key("leaf_ttl"), "must be at least 1s"));
        }
    }
    if let Some(j) = &setup.ca_change_jitter {
        go_duration(&at.key("ca_change_jitter"), j)?;
    }
    if let Some(ca) = &setup.ca {
        check_key_kind(&at.key("ca"), ca.key_type.as_deref(), ca.key_bits)?;
    }
    if let Some(p) = &setup.protocol {
        one_of(&at.key("protocol"), p, PROTOCOLS)?;
    }
    if setup.ipv6 && (setup.transparent.is_some() || setup.app_socket) {
        return Err(FieldError::new(
            at.key("ipv6"),
            "`ipv6` puts the app and instances on ::1: not with transparent mode or `app_socket`",
        ));
    }
    if setup
        .token_rules
        .as_deref()
        .is_some_and(|r| r.trim().is_empty())
    {
        return Err(FieldError::new(
            at.key("token_rules"),
            "empty: leave `token_rules` out for the harness's default rules",
        ));
    }
    if let Some(t) = &setup.transparent
        && t.outbound_port == Some(0)
    {
        return Err(FieldError::new(
            at.key("transparent").key("outbound_port"),
            "must be a port number (1-65535)",
        ));
    }
    for (i, u) in setup.upstreams.iter().enumerate() {
        let at = at.key("upstreams").index(i);
        service_name(&at.key("name"), &u.name)?;
        if let Some(mode) = &u.socket_mode {
            if !u.socket {
                return Err(FieldError::new(
                    at.key("socket_mode"),
                    "only an upstream with `socket = true` has a socket mode",
                ));
            }
            if parse_socket_mode(mode).is_none() {
                return Err(FieldError::new(
                    at.key("socket_mode"),
                    format!("{mode:?} is not an octal file mode such as \"0600\""),
                ));
            }
        }
        if u.implicit {
            check_implicit(&at, u, setup)?;
        }
        if setup.upstreams[..i].iter().any(|o| o.name == u.name) {
            return Err(FieldError::new(
                at.key("name"),
                format!("upstream {:?} is listed twice", u.name),
            ));
        }
    }
    for (i, inst) in setup.instances.iter().enumerate() {
        let at = at.key("instances").index(i);
        check_instance(&at, inst)?;
        if setup.instances[..i].iter().any(|o| o.id == inst.id) {
            return Err(FieldError::new(
                at.key("id"),
                format!("instance id {:?} is used twice", inst.id),
            ));
        }
    }
    for (i, spec) in setup.intentions.iter().enumerate() {
        check_intention(&at.key("intentions").index(i), spec, setup)?;
    }
    for (i, entry) in setup.config_entries.iter().enumerate() {
        check_config_entry(&at.key("config_entries").index(i), entry)?;
    }
    Ok(())
}

/// An implicit upstream exists only in transparent mode, as a plain service reached through
/// the outbound listener: no socket, no prepared query, present from the start.
fn check_implicit(
    at: &FieldPath,
    u: &crate::model::UpstreamSpec,
    setup: &Setup,
) -> Result<(), FieldError> {
    let conflict = if setup.transparent.is_none() {
        Some((
            "implicit",
            "an implicit upstream needs transparent mode (a `[setup.transparent]` table): \
             Consul derives upstreams from intentions only for a transparent proxy",
        ))
    } else if u.socket {
        Some((
            "socket",
            "an implicit upstream has no local listener, so no unix socket",
        ))
    } else if u.prepared_query {
        Some((
            "prepared_query",
            "a prepared query is never an implicit upstream (Consul derives only services \
             from intentions)",
        ))
    } else if setup
        .intentions
        .iter()
        .any(|i| i.source == "db" && i.destination == u.name)
    {
        Some((
            "implicit",
            "the harness writes the intention `db -> <name>` allow for an implicit upstream; \
             leave it out of `setup.intentions` (an `intention` step may change it later)",
        ))
    } else if !u.initial {
        Some((
            "initial",
            "an implicit upstream is not in the registration, so `add-upstream` cannot add \
             it; change the intention `db -> <name>` with an `intention` step instead",
        ))
    } else {
        None
    };
    match conflict {
        Some((key, why)) => Err(FieldError::new(at.key(key), why)),
        None => Ok(()),
    }
}

pub(crate) fn check_instance(
    at: &FieldPath,
    inst: &crate::model::InstanceSpec,
) -> Result<(), FieldError> {
    service_name(&at.key("id"), &inst.id)?;
    service_name(&at.key("service"), &inst.service)?;
    if let Some(identity) = &inst.identity {
        service_name(&at.key("identity"), identity)?;
    }
    if let Some(status) = &inst.status {
        one_of(&at.key("status"), status, HEALTH_STATUSES)?;
    }
    if let Some(host) = &inst.hostname
        && (host.is_empty() || host.contains(char::is_whitespace))
    {
        return Err(FieldError::new(at.key("hostname"), "must be a host name"));
    }
    if let Some(p) = &inst.protocol {
        one_of(&at.key("protocol"), p, &["tcp", "http", "http2", "grpc"])?;
    }
    for k in inst.meta.keys() {
        if k.is_empty() {
            return Err(FieldError::new(at.key("meta"), "an empty key"));
        }
    }
    if let Some(v) = &inst.tls_version {
        one_of(&at.key("tls_version"), v, &["1.2", "1.3"])?;
    }
    for (i, c) in inst.cipher_suites.iter().enumerate() {
        if !c.starts_with("TLS_") || c.contains(char::is_whitespace) {
            return Err(FieldError::new(
                at.key("cipher_suites").index(i),
                "must be an IANA cipher suite name, e.g. TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            ));
        }
    }
    super::route::check_instance_answer(at, inst)
}

/// A `socket_mode` as a file mode: octal digits (a leading `0` optional), at most `0777`.
pub fn parse_socket_mode(text: &str) -> Option<u32> {
    let digits = text.strip_prefix("0o").unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        return None;
    }
    u32::from_str_radix(digits, 8).ok().filter(|m| *m <= 0o777)
}

/// An intention in shorthand, as Consul would validate it (`Action` xor `Permissions`, no
/// partial wildcards, no Permissions toward `*`, L7 only on an HTTP-family protocol).
pub(crate) fn check_intention(
    at: &FieldPath,
    spec: &IntentionSpec,
    setup: &Setup,
) -> Result<(), FieldError> {
    intention_end(&at.key("source"), &spec.source)?;
    intention_end(&at.key("destination"), &spec.destination)?;
    match (&spec.action, &spec.permissions) {
        (None, None) => Err(FieldError::new(
            at.clone(),
            "an intention needs `action` (L4) or `permissions` (L7)",
        )),
        (Some(_), Some(_)) => Err(FieldError::new(
            at.key("action"),
            "`action` must be omitted when `permissions` are given (Consul's rule)",
        )),
        (Some(_), None) => Ok(()),
        (None, Some(perms)) => {
            let at = at.key("permissions");
            if spec.destination == "*" {
                return Err(FieldError::new(
                    at,
                    "permissions cannot be specified on intentions with wildcarded destinations",
                ));
            }
            if perms.is_empty() {
                return Err(FieldError::new(at, "must not be empty"));
            }
            for (i, p) in perms.iter().enumerate() {
                check_permission(&at.index(i), p)?;
            }
            if spec.destination == "db" && !db_is_l7(setup) {
                return Err(FieldError::new(
                    at,
                    "L7 permissions need db's protocol to be http, http2 or grpc \
                     (set `setup.protocol`)",
                ));
            }
            Ok(())
        }
    }
}

fn check_permission(at: &FieldPath, p: &Value) -> Result<(), FieldError> {
    let Some(obj) = p.as_object() else {
        return Err(FieldError::new(at.clone(), "a permission is a table"));
    };
    match obj.get("Action").and_then(Value::as_str) {
        Some("allow" | "deny") => {}
        _ => {
            return Err(FieldError::new(
                at.key("Action"),
                "must be \"allow\" or \"deny\"",
            ));
        }
    }
    match obj.get("HTTP").and_then(Value::as_object) {
        Some(http) if !http.is_empty() => Ok(()),
        _ => Err(FieldError::new(
            at.key("HTTP"),
            "HTTP should not be empty (Consul's rule: at least one condition)",
        )),
    }
}

/// Whether db's protocol (setup or a `service-defaults`/`proxy-defaults` entry) is L7.
fn db_is_l7(setup: &Setup) -> bool {
    let l7 = |p: Option<&str>| {
        p.is_some_and(|p| L7_PROTOCOLS.contains(&p.to_ascii_lowercase().as_str()))
    };
    l7(setup.protocol.as_deref())
        || setup
            .config_entries
            .iter()
            .any(|e| match entry_kind_name(e) {
                Some(("service-defaults", "db")) => l7(e.get("Protocol").and_then(Value::as_str)),
                Some(("proxy-defaults", _)) => l7(e
                    .get("Config")
                    .and_then(|c| c.get("protocol"))
                    .and_then(Value::as_str)),
                _ => false,
            })
}

/// `Kind` and `Name` of a config entry (either case of the key, as Consul decodes them). A
/// `mesh` entry has no `Name` key (Consul refuses one): its name is always `mesh`.
pub(crate) fn entry_kind_name(e: &Value) -> Option<(&str, &str)> {
    let get = |a: &str, b: &str| e.get(a).or_else(|| e.get(b)).and_then(Value::as_str);
    let kind = get("Kind", "kind")?;
    if kind == "mesh" {
        return Some((kind, "mesh"));
    }
    Some((kind, get("Name", "name")?))
}

/// Config entry kinds the simulated agent stores.
const ENTRY_KINDS: &[&str] = &[
    "service-intentions",
    "service-defaults",
    "proxy-defaults",
    "service-resolver",
    "service-splitter",
    "service-router",
    "mesh",
];

pub(crate) fn check_config_entry(at: &FieldPath, entry: &Value) -> Result<(), FieldError> {
    if !entry.is_object() {
        return Err(FieldError::new(
            at.clone(),
            "a config entry is a table in Consul's JSON shape",
        ));
    }
    let Some((kind, name)) = entry_kind_name(entry) else {
        return Err(FieldError::new(
            at.clone(),
            "a config entry needs string `Kind` and `Name` keys",
        ));
    };
    one_of(&at.key("Kind"), kind, ENTRY_KINDS)?;
    if name.is_empty() {
        return Err(FieldError::new(at.key("Name"), "must not be empty"));
    }
    Ok(())
}

/// `key_type` / `key_bits` as `[setup.ca]` and `rotate-ca` take them: `ec` 256/384 or `rsa`
/// 2048/4096 (the kinds agent-sim's CA runs; Consul also accepts ec 224/521).
pub(crate) fn check_key_kind(
    at: &FieldPath,
    key_type: Option<&str>,
    key_bits: Option<u32>,
) -> Result<(), FieldError> {
    let key_type = key_type.unwrap_or("ec");
    let allowed: &[u32] = match key_type {
        "ec" => &[256, 384],
        "rsa" => &[2048, 4096],
        other => {
            return Err(FieldError::new(
                at.key("key_type"),
                format!("must be \"ec\" or \"rsa\", not {other:?}"),
            ));
        }
    };
    match key_bits {
        Some(bits) if !allowed.contains(&bits) => Err(FieldError::new(
            at.key("key_bits"),
            format!("{key_type} keys must have {allowed:?} bits, not {bits}"),
        )),
        _ => Ok(()),
    }
}
