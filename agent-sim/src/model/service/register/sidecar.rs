//! `Connect.SidecarService` expansion: the sidecar's defaults from its parent, its port from
//! the agent's sidecar range, and its default checks.

use super::{RegisterContext, SIDECAR_SUFFIX, node_service_from_definition};
use crate::go::duration::GoDuration;
use crate::model::service::RegisterError;
use crate::model::service::check::CheckDefinition;
use crate::model::service::definition::ServiceDefinition;
use crate::model::service::model::{NodeService, ServiceKind};
use crate::model::service::validate::{join_host_port, validate_service_meta};

/// `sidecarServiceFromNodeService`: defaults from the parent.
pub(super) fn build_sidecar(
    parent: &NodeService,
    def: &ServiceDefinition,
) -> Result<NodeService, String> {
    let mut sc = node_service_from_definition(def);
    sc.id = format!("{}{SIDECAR_SUFFIX}", parent.id);
    validate_service_meta(&sc.kind, &sc.meta)?;
    if sc.meta.is_empty() {
        sc.meta = parent.meta.clone();
    }
    if sc.tags.is_empty() {
        sc.tags = parent.tags.clone();
    }
    if sc.locality.is_none() {
        sc.locality = parent.locality.clone();
    }
    sc.locally_registered_as_sidecar = true;
    if sc.kind == ServiceKind::Typical {
        sc.kind = ServiceKind::ConnectProxy;
    }
    if sc.service.is_empty() {
        sc.service = format!("{}{SIDECAR_SUFFIX}", parent.service);
    }
    if sc.address.is_empty() {
        sc.address = parent.address.clone();
    }
    let p = &mut sc.proxy;
    if p.destination_service_name.is_empty() {
        p.destination_service_name = parent.service.clone();
    }
    if p.destination_service_id.is_empty() {
        p.destination_service_id = parent.id.clone();
    }
    if p.local_service_socket_path.is_empty()
        && (p.local_service_address.is_empty() || p.local_service_port == 0)
    {
        if parent.socket_path.is_empty() {
            if p.local_service_address.is_empty() {
                p.local_service_address = "127.0.0.1".into();
            }
            if p.local_service_port == 0 {
                p.local_service_port = parent.port;
            }
        } else {
            p.local_service_socket_path = parent.socket_path.clone();
        }
    }
    Ok(sc)
}

/// `sidecarPortFromServiceIDLocked`: keep the sidecar's port when it already has one in range,
/// else the lowest port in range no service uses.
pub(super) fn allocate_sidecar_port(
    sidecar_id: &str,
    ctx: &RegisterContext<'_>,
    added: &[NodeService],
) -> Result<u16, RegisterError> {
    let (min, max) = (ctx.sidecar_min_port, ctx.sidecar_max_port);
    if min == 0 || max == 0 {
        return Err(RegisterError::Internal(
            "no port provided for sidecar_service and auto-assignment disabled in config".into(),
        ));
    }
    let current = ctx
        .existing
        .iter()
        .copied()
        .filter(|s| !added.iter().any(|a| a.id == s.id))
        .chain(added);
    let mut used = Vec::new();
    for svc in current {
        if (min..=max).contains(&svc.port) {
            if svc.id == sidecar_id {
                return Ok(svc.port);
            }
            used.push(svc.port);
        }
    }
    (min..=max).find(|p| !used.contains(p)).ok_or_else(|| {
        RegisterError::Internal(format!(
            "no port provided for sidecar_service and none left in the configured range [{min}, {max}]"
        ))
    })
}

/// `sidecarDefaultChecks`: a TCP check on the sidecar's listener and an alias of the parent.
pub(super) fn default_sidecar_checks(sc: &NodeService) -> [CheckDefinition; 2] {
    let addr = if sc.address.is_empty() {
        &sc.proxy.local_service_address
    } else {
        &sc.address
    };
    let parent_id = sc.id.strip_suffix(SIDECAR_SUFFIX).unwrap_or(&sc.id);
    [
        CheckDefinition {
            name: "Connect Sidecar Listening".into(),
            tcp: join_host_port(addr, sc.port),
            interval: GoDuration(10_000_000_000),
            ..CheckDefinition::default()
        },
        CheckDefinition {
            name: format!("Connect Sidecar Aliasing {parent_id}"),
            alias_service: parent_id.to_owned(),
            ..CheckDefinition::default()
        },
    ]
}
