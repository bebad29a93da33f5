//! The `x-consul-token` checks of Consul's `agent/xds/server.go`: `authenticate` (the token must
//! resolve: else `Unauthenticated`, "unauthenticated: ACL not found") up front, and `authorize`
//! (`service:write` on the proxy's destination service: else `PermissionDenied` with the ACL
//! text) on every request and snapshot, using the store's ACL code.

use tonic::Status;

use crate::model::acl::{self, Authorizer, Level, Resource};
use crate::model::service::ServiceKind;
use crate::state::store::Store;

/// The metadata key Envoy's bootstrap puts the token under.
pub(crate) const TOKEN_KEY: &str = "x-consul-token";

/// Consul's `authenticate`: resolves the token (ACLs off: allow all).
pub(crate) fn authenticate(store: &Store, token: Option<&str>) -> Result<Authorizer, Status> {
    store
        .read(|st| acl::resolve(&store.cfg.acl, &st.tokens, token))
        .map_err(|e| Status::unauthenticated(format!("unauthenticated: {e}")))
}

/// Consul's `authorize` for a connect proxy: `service:write` on its destination service.
pub(crate) fn authorize(
    store: &Store,
    token: Option<&str>,
    destination: &str,
) -> Result<(), Status> {
    let authz = authenticate(store, token)?;
    authz
        .require(Resource::Service, destination, Level::Write)
        .map_err(Status::permission_denied)
}

/// The destination service of the connect proxy registered on this agent as `proxy_id`.
pub(crate) fn destination_of(store: &Store, proxy_id: &str) -> Option<String> {
    let node = &store.cfg.node_name;
    store.read(|st| {
        st.services
            .get(&(node.clone(), proxy_id.to_owned()))
            .filter(|s| s.kind == ServiceKind::ConnectProxy)
            .map(|s| s.proxy.destination_service_name.clone())
    })
}
