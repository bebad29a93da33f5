//! Turning a decoded registration into what the agent stores, the way Consul's
//! `AgentRegisterService` + `AddService` do: validation in Consul's order and texts,
//! `Connect.SidecarService` expansion, sidecar port allocation, default tagged addresses and
//! the service checks (IDs, names, statuses, indexes).

use super::RegisterError;
use super::check::{CheckDefinition, valid_status};
use super::definition::ServiceDefinition;
use super::model::{HealthCheck, NodeService, ServiceAddress, ServiceConnect, ServiceKind};
use super::validate::{
    ip_is_v4, is_any_address, multierror, validate_for_agent, validate_node_service,
    validate_service_meta, validate_tagged_addresses, validate_weights,
};

/// Suffix of a sidecar's service ID and default name.
pub const SIDECAR_SUFFIX: &str = "-sidecar-proxy";

const STATUS_TEXT: &str = "Status for checks must 'passing', 'warning', 'critical'";
const SCRIPTS_DISABLED: &str = "Scripts are disabled on this agent from remote calls; to enable, configure 'enable_script_checks' to true";

/// What the agent knows when a registration arrives.
#[derive(Debug, Clone, Copy)]
pub struct RegisterContext<'a> {
    /// The agent's node name (checks carry it).
    pub node_name: &'a str,
    /// Every service currently registered on this agent (borrowed: with 20,000 services, a
    /// copy per registration made registering 10,000 services with sidecars quadratic).
    pub existing: &'a [&'a NodeService],
    /// Every check currently registered on this agent (a re-registered check keeps its status
    /// and output).
    pub existing_checks: &'a [&'a HealthCheck],
    /// The raft index this write gets.
    pub index: u64,
    /// `ports.sidecar_min_port` (0 disables automatic sidecar ports).
    pub sidecar_min_port: u16,
    /// `ports.sidecar_max_port`.
    pub sidecar_max_port: u16,
    /// `enable_script_checks`; off by default, so script checks fail with Consul's 500.
    pub enable_remote_script_checks: bool,
}

impl<'a> RegisterContext<'a> {
    /// A context with Consul's defaults: sidecar ports 21000-21255, script checks disabled, no
    /// existing checks.
    pub fn new(node_name: &'a str, existing: &'a [&'a NodeService], index: u64) -> Self {
        Self {
            node_name,
            existing,
            existing_checks: &[],
            index,
            sidecar_min_port: 21000,
            sidecar_max_port: 21255,
            enable_remote_script_checks: false,
        }
    }
}

/// What a registration stores.
#[derive(Debug, Clone, PartialEq)]
pub struct Registration {
    /// The service, then its sidecar (if `Connect.SidecarService` was given).
    pub services: Vec<NodeService>,
    /// The checks of those services, in order.
    pub checks: Vec<HealthCheck>,
    /// Tokens given inside the definition.
    pub tokens: RegistrationTokens,
    /// The `service:write` permissions the request needs, in Consul's order.
    pub acl: Vec<ServiceWrite>,
}

/// Tokens given inside a registration body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistrationTokens {
    /// The service's `Token` (Consul keeps it for anti-entropy; it does not authorize the
    /// request).
    pub service: String,
    /// `Connect.SidecarService.Token`: when set, the sidecar's permissions are checked with it
    /// instead of the request's token.
    pub sidecar: Option<String>,
}

/// One `service:write` permission a registration needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceWrite {
    /// The service name the permission is on.
    pub service: String,
    /// The token to check it with: `None` = the request's token.
    pub token: Option<String>,
}

/// Validates a registration and expands it into the services and checks to store, with
/// Consul's errors: 400 `Invalid Weights: ...`, `Invalid Service Meta: ...`, `Validation
/// failed: <multierror>`, `Invalid check: ...`, the check status text, `Invalid check in
/// sidecar_service: ...`, `Invalid SidecarService: ...`, `Failed Validation: <multierror>`;
/// 500 for a tagged-address mismatch, disabled script checks and an exhausted sidecar port
/// range.
pub fn expand_registration(
    def: ServiceDefinition,
    ctx: &RegisterContext<'_>,
) -> Result<Registration, RegisterError> {
    let bad = RegisterError::BadRequest;
    if def.name.is_empty() {
        return Err(bad("Missing service name".into()));
    }
    if is_any_address(&def.address) {
        return Err(bad("Invalid service address".into()));
    }
    let main = node_service_from_definition(&def);
    if let Some(w) = &def.weights {
        validate_weights(w).map_err(|e| bad(format!("Invalid Weights: {e}")))?;
    }
    validate_service_meta(&main.kind, &main.meta)
        .map_err(|e| bad(format!("Invalid Service Meta: {e}")))?;
    let errors = validate_node_service(&main, def.sidecar_service());
    if !errors.is_empty() {
        return Err(bad(format!("Validation failed: {}", multierror(&errors))));
    }
    let main_checks = check_types(&def, "Invalid check")?;
    let sidecar_def = def.sidecar_service();
    let sidecar_checks = match sidecar_def {
        Some(sc) => check_types(sc, "Invalid check in sidecar_service")?,
        None => Vec::new(),
    };

    let mut acl = write_requirements(&main, None, ctx);
    let sidecar = match sidecar_def {
        Some(sc_def) => {
            let sc = build_sidecar(&main, sc_def)
                .map_err(|e| bad(format!("Invalid SidecarService: {e}")))?;
            let errors = validate_for_agent(&sc, sc_def.sidecar_service());
            if !errors.is_empty() {
                return Err(bad(format!("Failed Validation: {}", multierror(&errors))));
            }
            let token = Some(sc_def.token.as_str()).filter(|t| !t.is_empty());
            acl.extend(write_requirements(&sc, token, ctx));
            Some(sc)
        }
        None => None,
    };

    let mut out = Registration {
        services: Vec::new(),
        checks: Vec::new(),
        tokens: RegistrationTokens {
            service: String::new(),
            sidecar: sidecar_def
                .map(|sc| sc.token.clone())
                .filter(|t| !t.is_empty()),
        },
        acl,
    };
    out.tokens.service = def.token;
    add_service(main, &main_checks, ctx, &mut out)?;
    if let Some(mut sc) = sidecar {
        if sc.port == 0 {
            sc.port = allocate_sidecar_port(&sc.id, ctx, &out.services)?;
        }
        let checks = if sidecar_checks.is_empty() {
            default_sidecar_checks(&sc).to_vec()
        } else {
            sidecar_checks
        };
        add_service(sc, &checks, ctx, &mut out)?;
    }
    Ok(out)
}

/// `ServiceDefinition.NodeService()`: ID defaults to the name, upstream types to `service`.
pub(crate) fn node_service_from_definition(def: &ServiceDefinition) -> NodeService {
    let mut proxy = def.proxy.clone().unwrap_or_default();
    for u in &mut proxy.upstreams {
        if u.destination_type.is_empty() {
            u.destination_type = "service".into();
        }
    }
    NodeService {
        kind: def.kind.clone(),
        id: if def.id.is_empty() {
            def.name.clone()
        } else {
            def.id.clone()
        },
        service: def.name.clone(),
        tags: def.tags.clone(),
        address: def.address.clone(),
        tagged_addresses: def.tagged_addresses.clone(),
        meta: def.meta.clone(),
        port: def.port,
        socket_path: def.socket_path.clone(),
        weights: def.weights.unwrap_or_default(),
        enable_tag_override: def.enable_tag_override,
        locality: def.locality.clone(),
        proxy,
        connect: ServiceConnect {
            native: def.connect.as_ref().is_some_and(|c| c.native),
        },
        ..NodeService::default()
    }
}

/// `CheckTypes()` plus the handler's status check.
fn check_types(
    def: &ServiceDefinition,
    prefix: &str,
) -> Result<Vec<CheckDefinition>, RegisterError> {
    let checks: Vec<CheckDefinition> = def.check_definitions().into_iter().cloned().collect();
    for c in &checks {
        c.validate()
            .map_err(|e| RegisterError::BadRequest(format!("{prefix}: {e}")))?;
    }
    if checks
        .iter()
        .any(|c| !c.status.is_empty() && !valid_status(&c.status))
    {
        return Err(RegisterError::BadRequest(STATUS_TEXT.into()));
    }
    Ok(checks)
}

/// `vetServiceRegister`: write on the name, on the name of the service this ID replaces, and
/// for a proxy on its destination.
fn write_requirements(
    ns: &NodeService,
    token: Option<&str>,
    ctx: &RegisterContext<'_>,
) -> Vec<ServiceWrite> {
    let mut names = vec![ns.service.clone()];
    if let Some(existing) = ctx.existing.iter().find(|s| s.id == ns.id) {
        names.push(existing.service.clone());
    }
    if ns.kind == ServiceKind::ConnectProxy {
        names.push(ns.proxy.destination_service_name.clone());
    }
    let mut out: Vec<ServiceWrite> = Vec::new();
    for service in names {
        if !out.iter().any(|w| w.service == service) {
            out.push(ServiceWrite {
                service,
                token: token.map(str::to_owned),
            });
        }
    }
    out
}

/// `AddService`: `validateService`, then `addServiceInternal` (default tagged addresses, the
/// checks, the script-check rule) and index bookkeeping.
fn add_service(
    mut ns: NodeService,
    check_defs: &[CheckDefinition],
    ctx: &RegisterContext<'_>,
    out: &mut Registration,
) -> Result<(), RegisterError> {
    validate_tagged_addresses(&ns).map_err(RegisterError::Internal)?;
    if let Some(is_v4) = ip_is_v4(&ns.address) {
        let keys = if is_v4 {
            ["lan_ipv4", "wan_ipv4"]
        } else {
            ["lan_ipv6", "wan_ipv6"]
        };
        for key in keys {
            ns.tagged_addresses
                .entry(key.to_owned())
                .or_insert_with(|| ServiceAddress {
                    address: ns.address.clone(),
                    port: ns.port,
                });
        }
    }
    let mut checks = Vec::with_capacity(check_defs.len());
    for (i, def) in check_defs.iter().enumerate() {
        let mut check = build_check(&ns, def, i, check_defs.len(), ctx.node_name);
        if let Some(prev) = ctx
            .existing_checks
            .iter()
            .find(|c| c.check_id == check.check_id)
        {
            check.status.clone_from(&prev.status);
            check.output.clone_from(&prev.output);
        }
        checks.push(check);
    }
    if check_defs.iter().any(|c| c.is_script()) && !ctx.enable_remote_script_checks {
        return Err(RegisterError::Internal(SCRIPTS_DISABLED.into()));
    }
    match ctx.existing.iter().find(|s| s.id == ns.id) {
        Some(prev) if prev.is_same(&ns) => {
            (ns.create_index, ns.modify_index) = (prev.create_index, prev.modify_index);
        }
        Some(prev) => (ns.create_index, ns.modify_index) = (prev.create_index, ctx.index),
        None => (ns.create_index, ns.modify_index) = (ctx.index, ctx.index),
    }
    for check in &mut checks {
        match ctx
            .existing_checks
            .iter()
            .find(|c| c.check_id == check.check_id)
        {
            Some(prev) if prev.is_same(check) => {
                (check.create_index, check.modify_index) = (prev.create_index, prev.modify_index);
            }
            Some(prev) => (check.create_index, check.modify_index) = (prev.create_index, ctx.index),
            None => (check.create_index, check.modify_index) = (ctx.index, ctx.index),
        }
    }
    out.services.push(ns);
    out.checks.extend(checks);
    Ok(())
}

fn build_check(
    ns: &NodeService,
    def: &CheckDefinition,
    i: usize,
    count: usize,
    node: &str,
) -> HealthCheck {
    let check_id = if def.check_id.is_empty() {
        let base = format!("service:{}", ns.id);
        if count > 1 {
            format!("{base}:{}", i + 1)
        } else {
            base
        }
    } else {
        def.check_id.clone()
    };
    let name = if def.name.is_empty() {
        format!("Service '{}' check", ns.service)
    } else {
        def.name.clone()
    };
    def.to_health_check(node.to_owned(), check_id, name, Some(ns))
}

mod sidecar;

use sidecar::{allocate_sidecar_port, build_sidecar, default_sidecar_checks};

#[cfg(test)]
mod tests;
