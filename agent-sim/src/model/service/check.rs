//! Service check definitions (Consul's `CheckType`): decoding with Go's duration rules,
//! validation with Consul's texts, the check type name, and health status helpers.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::model::{
    HEALTH_CRITICAL, HEALTH_MAINTENANCE, HEALTH_PASSING, HEALTH_WARNING, HealthCheck, NodeService,
};
use crate::go::duration::GoDuration;

/// One check of a service registration (Consul's `CheckType`), decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckDefinition {
    pub check_id: String,
    pub name: String,
    pub status: String,
    pub notes: String,
    /// `ScriptArgs` (alias `Args`).
    pub script_args: Vec<String>,
    pub http: String,
    pub h2ping: String,
    pub h2ping_use_tls: bool,
    pub header: BTreeMap<String, Vec<String>>,
    pub method: String,
    pub body: String,
    pub disable_redirects: bool,
    pub tcp: String,
    pub udp: String,
    pub interval: GoDuration,
    pub alias_node: String,
    pub alias_service: String,
    pub docker_container_id: String,
    pub shell: String,
    pub grpc: String,
    pub grpc_use_tls: bool,
    pub os_service: String,
    pub tls_server_name: String,
    pub tls_skip_verify: bool,
    pub timeout: GoDuration,
    pub ttl: GoDuration,
    pub success_before_passing: i64,
    pub failures_before_warning: i64,
    pub failures_before_critical: i64,
    pub deregister_critical_service_after: GoDuration,
    pub output_max_size: i64,
}

impl CheckDefinition {
    /// The health check this definition registers on `node` as `check_id`/`name`, bound to
    /// `owner`'s service if any: status critical unless given, durations as Go prints them
    /// (empty when zero), the TTL only when set. Indexes are the caller's.
    pub(crate) fn to_health_check(
        &self,
        node: String,
        check_id: String,
        name: String,
        owner: Option<&NodeService>,
    ) -> HealthCheck {
        let go_string = |d: GoDuration| {
            if d.0 == 0 {
                String::new()
            } else {
                d.to_string()
            }
        };
        HealthCheck {
            node,
            check_id,
            name,
            status: if self.status.is_empty() {
                HEALTH_CRITICAL.into()
            } else {
                self.status.clone()
            },
            notes: self.notes.clone(),
            service_id: owner.map(|s| s.id.clone()).unwrap_or_default(),
            service_name: owner.map(|s| s.service.clone()).unwrap_or_default(),
            service_tags: owner.map(|s| s.tags.clone()).unwrap_or_default(),
            type_: self.type_name().into(),
            interval: go_string(self.interval),
            timeout: go_string(self.timeout),
            ttl: Some(self.ttl).filter(|t| t.0 > 0),
            tcp: self.tcp.clone(),
            http: self.http.clone(),
            grpc: self.grpc.clone(),
            alias_service: self.alias_service.clone(),
            alias_node: self.alias_node.clone(),
            ..HealthCheck::default()
        }
    }

    /// Validates like Consul's `CheckType.Validate`.
    pub fn validate(&self) -> Result<(), String> {
        let interval_check = self.is_script()
            || !self.http.is_empty()
            || !self.tcp.is_empty()
            || !self.udp.is_empty()
            || !self.grpc.is_empty()
            || !self.h2ping.is_empty()
            || !self.os_service.is_empty();
        let positive = |d: GoDuration| d.0 > 0;
        if positive(self.interval) && positive(self.ttl) {
            return Err("Interval and TTL cannot both be specified".into());
        }
        if interval_check && !positive(self.interval) {
            return Err(
                "Interval must be > 0 for Script, HTTP, H2PING, TCP, UDP or OSService checks"
                    .into(),
            );
        }
        if interval_check && self.is_alias() {
            return Err("Interval cannot be set for Alias checks".into());
        }
        if self.is_alias() && positive(self.ttl) {
            return Err("TTL must be not be set for Alias checks".into());
        }
        if !interval_check && !self.is_alias() && !positive(self.ttl) {
            return Err("TTL must be > 0 for TTL checks".into());
        }
        if self.output_max_size < 0 {
            return Err("MaxOutputMaxSize must be positive".into());
        }
        if self.failures_before_warning > self.failures_before_critical {
            return Err("FailuresBeforeWarning can't be higher than FailuresBeforeCritical".into());
        }
        Ok(())
    }

    /// True when nothing at all is set (Consul skips such a `Check`).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// An alias check (`AliasNode` or `AliasService`).
    pub fn is_alias(&self) -> bool {
        !self.alias_node.is_empty() || !self.alias_service.is_empty()
    }

    /// A script check (`ScriptArgs`).
    pub fn is_script(&self) -> bool {
        !self.script_args.is_empty()
    }

    /// The check type name as Consul reports it in `Type`.
    pub fn type_name(&self) -> &'static str {
        let interval = self.interval.0 > 0;
        if !self.grpc.is_empty() && interval {
            "grpc"
        } else if !self.http.is_empty() && interval {
            "http"
        } else if self.ttl.0 > 0 {
            "ttl"
        } else if !self.tcp.is_empty() && interval {
            "tcp"
        } else if !self.udp.is_empty() && interval {
            "udp"
        } else if self.is_alias() {
            "alias"
        } else if self.is_script() && !self.docker_container_id.is_empty() && interval {
            "docker"
        } else if self.is_script() {
            "script"
        } else if !self.h2ping.is_empty() && interval {
            "h2ping"
        } else if !self.os_service.is_empty() && interval {
            "os_service"
        } else {
            ""
        }
    }
}

/// The check as it arrives on the wire (canonical key spelling), before durations are parsed.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "PascalCase")]
pub(crate) struct RawCheck {
    #[serde(rename = "CheckID")]
    check_id: String,
    name: String,
    status: String,
    notes: String,
    script_args: Vec<String>,
    args: Vec<String>,
    #[serde(rename = "HTTP")]
    http: String,
    #[serde(rename = "H2PING")]
    h2ping: String,
    #[serde(rename = "H2PingUseTLS")]
    h2ping_use_tls: Option<bool>,
    header: BTreeMap<String, Vec<String>>,
    method: String,
    body: String,
    disable_redirects: bool,
    #[serde(rename = "TCP")]
    tcp: String,
    #[serde(rename = "UDP")]
    udp: String,
    interval: Option<Value>,
    alias_node: String,
    alias_service: String,
    #[serde(rename = "DockerContainerID")]
    docker_container_id: String,
    shell: String,
    #[serde(rename = "GRPC")]
    grpc: String,
    #[serde(rename = "GRPCUseTLS")]
    grpc_use_tls: bool,
    #[serde(rename = "OSService")]
    os_service: String,
    #[serde(rename = "TLSServerName")]
    tls_server_name: String,
    #[serde(rename = "TLSSkipVerify")]
    tls_skip_verify: bool,
    timeout: Option<Value>,
    #[serde(rename = "TTL")]
    ttl: Option<Value>,
    success_before_passing: i64,
    failures_before_warning: i64,
    failures_before_critical: i64,
    #[serde(rename = "ProxyHTTP")]
    _proxy_http: String,
    #[serde(rename = "ProxyGRPC")]
    _proxy_grpc: String,
    deregister_critical_service_after: Option<Value>,
    output_max_size: i64,
    /// Accepted and ignored, as Consul does.
    #[serde(rename = "ServiceID")]
    _service_id: String,
}

impl RawCheck {
    /// Parses the durations the way Consul's `CheckType.UnmarshalJSON` does; the error is Go's
    /// `time: invalid duration "x"`.
    pub(crate) fn into_definition(self) -> Result<CheckDefinition, String> {
        let script_args = if self.script_args.is_empty() {
            self.args
        } else {
            self.script_args
        };
        let h2ping_use_tls = self.h2ping_use_tls.unwrap_or(!self.h2ping.is_empty());
        Ok(CheckDefinition {
            check_id: self.check_id,
            name: self.name,
            status: self.status,
            notes: self.notes,
            script_args,
            http: self.http,
            h2ping: self.h2ping,
            h2ping_use_tls,
            header: self.header,
            method: self.method,
            body: self.body,
            disable_redirects: self.disable_redirects,
            tcp: self.tcp,
            udp: self.udp,
            interval: go_duration_field(self.interval.as_ref())?,
            alias_node: self.alias_node,
            alias_service: self.alias_service,
            docker_container_id: self.docker_container_id,
            shell: self.shell,
            grpc: self.grpc,
            grpc_use_tls: self.grpc_use_tls,
            os_service: self.os_service,
            tls_server_name: self.tls_server_name,
            tls_skip_verify: self.tls_skip_verify,
            timeout: go_duration_field(self.timeout.as_ref())?,
            ttl: go_duration_field(self.ttl.as_ref())?,
            success_before_passing: self.success_before_passing,
            failures_before_warning: self.failures_before_warning,
            failures_before_critical: self.failures_before_critical,
            deregister_critical_service_after: go_duration_field(
                self.deregister_critical_service_after.as_ref(),
            )?,
            output_max_size: self.output_max_size,
        })
    }
}

/// A duration field that Consul accepts as a Go duration string or as nanoseconds; anything
/// else is ignored (zero).
pub(crate) fn go_duration_field(v: Option<&Value>) -> Result<GoDuration, String> {
    match v {
        Some(Value::String(s)) => GoDuration::parse(s).map_err(|e| e.to_string()),
        // Go converts the float64 to a Duration, truncating toward zero.
        Some(Value::Number(n)) => Ok(GoDuration(n.as_f64().map_or(0, |f| f as i64))),
        _ => Ok(GoDuration(0)),
    }
}

/// True when the status is one a registration may set (`maintenance` is not).
pub fn valid_status(status: &str) -> bool {
    matches!(status, HEALTH_PASSING | HEALTH_WARNING | HEALTH_CRITICAL)
}

/// True when every check is `passing` (what `?passing` keeps). No checks means passing.
pub fn is_passing(checks: &[&HealthCheck]) -> bool {
    checks.iter().all(|c| c.status == HEALTH_PASSING)
}

/// Consul's aggregated status of a set of checks: `maintenance` (node or service maintenance
/// check present) > `critical` > `warning` > `passing`; an unknown status gives `""`.
pub fn aggregated_status(checks: &[&HealthCheck]) -> &'static str {
    let (mut warning, mut critical, mut maintenance) = (false, false, false);
    for check in checks {
        if check.check_id == "_node_maintenance"
            || check.check_id.starts_with("_service_maintenance:")
        {
            maintenance = true;
            continue;
        }
        match check.status.as_str() {
            HEALTH_PASSING => {}
            HEALTH_WARNING => warning = true,
            HEALTH_CRITICAL => critical = true,
            _ => return "",
        }
    }
    if maintenance {
        HEALTH_MAINTENANCE
    } else if critical {
        HEALTH_CRITICAL
    } else if warning {
        HEALTH_WARNING
    } else {
        HEALTH_PASSING
    }
}

#[cfg(test)]
mod tests;
