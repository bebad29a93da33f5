//! Health checks inside catalog registrations: their wire form (with the `Definition` object
//! and its string-or-nanoseconds durations) and the defaults the servers apply.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::model::service::RegisterError;
use crate::model::service::check::{CheckDefinition, go_duration_field};
use crate::model::service::model::{
    HEALTH_CRITICAL, HealthCheck, HealthCheckDefinition, NodeService,
};

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub(super) struct RawHealthCheck {
    node: String,
    #[serde(rename = "CheckID")]
    check_id: String,
    name: String,
    status: String,
    notes: String,
    output: String,
    #[serde(rename = "ServiceID")]
    service_id: String,
    service_name: String,
    service_tags: Vec<String>,
    #[serde(rename = "Type")]
    type_: String,
    interval: String,
    timeout: String,
    exposed_port: u16,
    definition: RawDefinition,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
struct RawDefinition {
    #[serde(rename = "HTTP")]
    http: String,
    #[serde(rename = "TLSServerName")]
    tls_server_name: String,
    #[serde(rename = "TLSSkipVerify")]
    tls_skip_verify: bool,
    header: BTreeMap<String, Vec<String>>,
    method: String,
    body: String,
    disable_redirects: bool,
    #[serde(rename = "TCP")]
    tcp: String,
    #[serde(rename = "UDP")]
    udp: String,
    #[serde(rename = "H2PING")]
    h2ping: String,
    #[serde(rename = "OSService")]
    os_service: String,
    #[serde(rename = "H2PingUseTLS")]
    h2ping_use_tls: bool,
    interval: Option<Value>,
    output_max_size: u64,
    timeout: Option<Value>,
    deregister_critical_service_after: Option<Value>,
    script_args: Vec<String>,
    #[serde(rename = "DockerContainerID")]
    docker_container_id: String,
    shell: String,
    #[serde(rename = "GRPC")]
    grpc: String,
    #[serde(rename = "GRPCUseTLS")]
    grpc_use_tls: bool,
    alias_node: String,
    alias_service: String,
    #[serde(rename = "TTL")]
    ttl: Option<Value>,
}

pub(super) fn catalog_check(
    raw: RawHealthCheck,
    node: &str,
    service: Option<&NodeService>,
) -> Result<HealthCheck, RegisterError> {
    let d = raw.definition;
    let duration = |v: Option<&Value>| {
        go_duration_field(v)
            .map_err(|e| RegisterError::BadRequest(format!("Request decode failed: {e}")))
    };
    let definition = HealthCheckDefinition {
        interval: duration(d.interval.as_ref())?,
        timeout: duration(d.timeout.as_ref())?,
        deregister_critical_service_after: duration(d.deregister_critical_service_after.as_ref())?,
        ttl: duration(d.ttl.as_ref())?,
        http: d.http,
        tls_server_name: d.tls_server_name,
        tls_skip_verify: d.tls_skip_verify,
        header: d.header,
        method: d.method,
        body: d.body,
        disable_redirects: d.disable_redirects,
        tcp: d.tcp,
        udp: d.udp,
        h2ping: d.h2ping,
        os_service: d.os_service,
        h2ping_use_tls: d.h2ping_use_tls,
        output_max_size: d.output_max_size,
        script_args: d.script_args,
        docker_container_id: d.docker_container_id,
        shell: d.shell,
        grpc: d.grpc,
        grpc_use_tls: d.grpc_use_tls,
        alias_node: d.alias_node,
        alias_service: d.alias_service,
    };
    let mut check = HealthCheck {
        node: if raw.node.is_empty() {
            node.to_owned()
        } else {
            raw.node
        },
        check_id: if raw.check_id.is_empty() {
            raw.name.clone()
        } else {
            raw.check_id
        },
        name: raw.name,
        status: if raw.status.is_empty() {
            HEALTH_CRITICAL.into()
        } else {
            raw.status
        },
        notes: raw.notes,
        output: raw.output,
        service_id: raw.service_id,
        service_name: raw.service_name,
        service_tags: raw.service_tags,
        type_: raw.type_,
        interval: raw.interval,
        timeout: raw.timeout,
        exposed_port: raw.exposed_port,
        ttl: Some(definition.ttl).filter(|t| t.0 > 0),
        tcp: definition.tcp.clone(),
        http: definition.http.clone(),
        grpc: definition.grpc.clone(),
        alias_service: definition.alias_service.clone(),
        alias_node: definition.alias_node.clone(),
        definition,
        ..HealthCheck::default()
    };
    if check.type_.is_empty() {
        check.type_ = check_type_of(&check.definition).into();
    }
    if let Some(svc) = service.filter(|s| !check.service_id.is_empty() && s.id == check.service_id)
    {
        check.service_name.clone_from(&svc.service);
        check.service_tags.clone_from(&svc.tags);
    }
    Ok(check)
}

/// The `Type` Consul derives for a check registered through the catalog.
fn check_type_of(d: &HealthCheckDefinition) -> &'static str {
    CheckDefinition {
        script_args: d.script_args.clone(),
        http: d.http.clone(),
        h2ping: d.h2ping.clone(),
        tcp: d.tcp.clone(),
        udp: d.udp.clone(),
        interval: d.interval,
        alias_node: d.alias_node.clone(),
        alias_service: d.alias_service.clone(),
        docker_container_id: d.docker_container_id.clone(),
        grpc: d.grpc.clone(),
        os_service: d.os_service.clone(),
        ttl: d.ttl,
        ..CheckDefinition::default()
    }
    .type_name()
}
