//! The prepared-queries table and its operations, as Consul's servers run them
//! (`agent/consul/prepared_query_endpoint.go`, `agent/consul/state/prepared_query.go`): `Apply`
//! (create, update, delete, with the `query:write` checks on the new and the stored name), `Get`
//! and `List` (ACL-filtered, tokens redacted for non-management readers), `Resolve` (ID, exact
//! name, longest template prefix; templates rendered), and `Execute` (the catalog lookup, health
//! and meta/tag filters, the ACL filter under the query's captured token, shuffle, limit).
//!
//! The sim has one datacenter and no peers: a `Failover` is counted as Consul counts it
//! (`Failovers`) but never finds instances. No sessions exist, so a `Session` is refused as
//! Consul refuses an unknown one.

use rand::Rng;
use rand::seq::SliceRandom;
use serde_json::{Map, Value, json};

use crate::model::acl::{self, Authorizer, Level, Resource};
use crate::model::prepared_query::{
    self as pq, Candidate, CompiledTemplate, PreparedQuery, QUERY_NOT_FOUND,
};
use crate::model::service;
use crate::state::error::StateError;
use crate::state::store::{HealthEntry, State, Store};

/// `PreparedQueryOp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// `POST /v1/query`.
    Create,
    /// `PUT /v1/query/:id`.
    Update,
    /// `DELETE /v1/query/:id`.
    Delete,
}

/// Consul's plain `acl.ErrPermissionDenied` (filters that removed the one thing asked for).
const PERMISSION_DENIED: &str = "Permission denied";

fn rpc(text: impl Into<String>) -> StateError {
    StateError::Rpc(text.into())
}

fn require_write(authz: &Authorizer, q: &PreparedQuery) -> Result<(), StateError> {
    match q.acl_prefix() {
        Some(prefix) => authz
            .require(Resource::Query, prefix, Level::Write)
            .map_err(StateError::PermissionDenied),
        None => Ok(()),
    }
}

/// `PreparedQuery.Apply`: returns the query's ID.
pub(crate) fn apply(
    store: &Store,
    authz: &Authorizer,
    op: Op,
    mut q: PreparedQuery,
) -> Result<String, StateError> {
    if op == Op::Create {
        if !q.id.is_empty() {
            return Err(rpc("ID must be empty when creating a new prepared query"));
        }
        q.id = store.with_rng(|r| {
            uuid::Builder::from_random_bytes(r.random())
                .into_uuid()
                .to_string()
        });
    }
    require_write(authz, &q)?;
    store.write(|st| {
        if op != Op::Create {
            let existing = st.prepared_queries.get(&q.id).ok_or_else(|| {
                rpc(format!(
                    "Cannot modify non-existent prepared query: '{}'",
                    q.id
                ))
            })?;
            require_write(authz, existing)?;
        }
        if op == Op::Delete {
            st.prepared_queries.remove(&q.id);
            st.prepared_query_index = st.next_index();
            return Ok(q.id);
        }
        pq::validate(&q).map_err(|e| rpc(format!("Invalid prepared query: {e}")))?;
        set(st, q)
    })
}

/// `preparedQuerySetTxn`, with the `raft apply failed: ` prefix the endpoint adds.
fn set(st: &mut State, mut q: PreparedQuery) -> Result<String, StateError> {
    let fail = |e: String| rpc(format!("raft apply failed: {e}"));
    let existing = st.prepared_queries.get(&q.id);
    let others = || st.prepared_queries.values().filter(|o| o.id != q.id);
    if !q.name.is_empty() {
        if others().any(|o| o.name.eq_ignore_ascii_case(&q.name)) {
            return Err(fail(format!(
                "name '{}' aliases an existing query name",
                q.name
            )));
        }
    } else if q.is_template() && others().any(|o| o.is_template() && o.name.is_empty()) {
        return Err(fail(
            "a query template with an empty name already exists".into(),
        ));
    }
    if pq::is_uuid(&q.name) && st.prepared_queries.contains_key(&q.name.to_lowercase()) {
        return Err(fail(format!(
            "name '{}' aliases an existing query ID",
            q.name
        )));
    }
    if !q.session.is_empty() {
        return Err(fail(format!("invalid session {:?}", q.session)));
    }
    if q.is_template() {
        CompiledTemplate::compile(&q)
            .map_err(|e| fail(format!("failed compiling template: {e}")))?;
    }
    let create = existing.map(|e| e.create_index);
    let index = st.next_index();
    q.create_index = create.unwrap_or(index);
    q.modify_index = index;
    st.prepared_query_index = index;
    let id = q.id.clone();
    st.prepared_queries.insert(id.clone(), q);
    Ok(id)
}

/// What a reader sees of `q`: `None` when the ACL filter drops it (`filterPreparedQueries`).
fn visible(authz: &Authorizer, q: &PreparedQuery) -> Option<PreparedQuery> {
    if authz.is_management() {
        return Some(q.clone());
    }
    let prefix = q.acl_prefix()?;
    authz
        .allows(Resource::Query, prefix, Level::Read)
        .then(|| q.redacted())
}

/// `PreparedQuery.List`: (table index, the visible queries, whether some were filtered).
pub(crate) fn list(st: &State, authz: &Authorizer) -> (u64, Vec<PreparedQuery>, bool) {
    let all: Vec<&PreparedQuery> = st.prepared_queries.values().collect();
    let shown: Vec<PreparedQuery> = all.iter().filter_map(|q| visible(authz, q)).collect();
    let filtered = shown.len() != all.len();
    (st.prepared_query_index, shown, filtered)
}

/// `PreparedQuery.Get` by ID.
pub(crate) fn get(
    st: &State,
    authz: &Authorizer,
    id: &str,
) -> Result<(u64, PreparedQuery), StateError> {
    lookup_id(id)?;
    let q = st
        .prepared_queries
        .get(&id.to_lowercase())
        .ok_or_else(|| StateError::NotFound(QUERY_NOT_FOUND.into()))?;
    let shown = match q.acl_prefix() {
        // No prefix ACL applies: whoever has the ID may see it (token still redacted).
        None if authz.is_management() => q.clone(),
        None => q.redacted(),
        Some(_) => visible(authz, q)
            .ok_or_else(|| StateError::PermissionDenied(PERMISSION_DENIED.into()))?,
    };
    Ok((st.prepared_query_index, shown))
}

/// memdb's UUID index refuses a key that is not 36 characters long.
fn lookup_id(id: &str) -> Result<(), StateError> {
    if id.len() != 36 {
        return Err(rpc(
            "failed prepared query lookup: UUID must be 36 characters",
        ));
    }
    Ok(())
}

/// `PreparedQueryResolve`: by ID (not templates), then exact name, then the longest template
/// prefix (case-insensitive); templates are rendered for the name asked for.
pub(crate) fn resolve(
    st: &State,
    id_or_name: &str,
    segment: &str,
) -> Result<PreparedQuery, StateError> {
    if id_or_name.is_empty() {
        return Err(rpc("Missing query ID"));
    }
    if let Some(q) = pq::is_uuid(id_or_name)
        .then(|| st.prepared_queries.get(&id_or_name.to_lowercase()))
        .flatten()
    {
        if q.is_template() {
            return Err(rpc(
                "prepared query templates can only be resolved up by name, not by ID",
            ));
        }
        return Ok(q.clone());
    }
    let render = |q: &PreparedQuery| -> Result<PreparedQuery, StateError> {
        if !q.is_template() {
            return Ok(q.clone());
        }
        CompiledTemplate::compile(q)
            .and_then(|ct| ct.render(id_or_name, segment))
            .map_err(|e| rpc(e.to_string()))
    };
    let lower = id_or_name.to_lowercase();
    if let Some(q) = st
        .prepared_queries
        .values()
        .find(|q| !q.name.is_empty() && q.name.to_lowercase() == lower)
    {
        return render(q);
    }
    let best = st
        .prepared_queries
        .values()
        .filter(|q| q.is_template() && lower.starts_with(&q.name.to_lowercase()))
        .max_by_key(|q| q.name.len());
    match best {
        Some(q) => render(q),
        None => Err(StateError::NotFound(QUERY_NOT_FOUND.into())),
    }
}

/// `PreparedQuery.Explain`: the resolved (rendered) query as the caller may see it.
pub(crate) fn explain(
    st: &State,
    authz: &Authorizer,
    id_or_name: &str,
    segment: &str,
) -> Result<PreparedQuery, StateError> {
    let q = resolve(st, id_or_name, segment)?;
    visible(authz, &q).ok_or_else(|| StateError::PermissionDenied(PERMISSION_DENIED.into()))
}

/// What `execute` needs besides the state.
pub(crate) struct ExecuteArgs<'a> {
    pub(crate) id_or_name: &'a str,
    /// The request's token (used when the query captured none).
    pub(crate) token: Option<&'a str>,
    /// `?limit` (0: no limit).
    pub(crate) limit: usize,
    /// `?connect=true`.
    pub(crate) connect: bool,
    /// `?near`: `_agent` puts the agent's own node first when it is among the results.
    pub(crate) near: Option<&'a str>,
    /// The agent's own proxy-config watch (xDS): without a token captured in the query, the
    /// results are not ACL-filtered (the sim's xDS reads every upstream's instances that way).
    pub(crate) as_agent: bool,
}

/// One execution: the (rendered) query, the instances left, and what the filters did.
pub(crate) struct Execution<'a> {
    pub(crate) query: PreparedQuery,
    pub(crate) nodes: Vec<HealthEntry<'a>>,
    pub(crate) filtered: bool,
    pub(crate) failovers: usize,
}

/// `PreparedQuery.Execute`: the response body without the query-meta fields (the HTTP layer
/// adds them) and whether the ACL filter removed instances.
pub(crate) fn execute(
    st: &State,
    store: &Store,
    args: &ExecuteArgs<'_>,
) -> Result<(Map<String, Value>, bool), StateError> {
    let Execution {
        query: q,
        nodes,
        filtered,
        failovers,
    } = run(st, store, args)?;
    let svc = &q.service;
    let items: Vec<Value> = nodes
        .iter()
        .map(|(node, s, checks)| service::health_entry_json(node, &st.with_virtual_ip(s), checks))
        .collect();
    let mut body = Map::new();
    body.insert("Service".into(), json!(svc.service));
    body.insert("Nodes".into(), Value::Array(items));
    body.insert("DNS".into(), json!({"TTL": q.dns.ttl}));
    body.insert("Datacenter".into(), json!(store.cfg.datacenter));
    body.insert("PeerName".into(), json!(""));
    body.insert("Failovers".into(), json!(failovers));
    Ok((body, filtered))
}

/// Resolves and runs a query (the part of `Execute` before the response is shaped).
pub(crate) fn run<'a>(
    st: &'a State,
    store: &Store,
    args: &ExecuteArgs<'_>,
) -> Result<Execution<'a>, StateError> {
    let q = resolve(st, args.id_or_name, "")?;
    let svc = &q.service;
    let connect = svc.connect || args.connect;
    let (_, entries) = st.health_entries(&svc.service, connect, false);
    let mut nodes: Vec<_> = entries
        .into_iter()
        .filter(|(node, s, checks)| {
            pq::keeps(
                svc,
                &Candidate {
                    node_meta: &node.meta,
                    service: s,
                    checks,
                },
            )
        })
        .collect();
    // The query's own token, if it captured one, else the caller's.
    let token = Some(q.token.as_str())
        .filter(|t| !t.is_empty())
        .or(args.token);
    let authz = if args.as_agent && q.token.is_empty() {
        Authorizer::AllowAll
    } else {
        acl::resolve(&store.cfg.acl, &st.tokens, token)
            .map_err(|e| StateError::PermissionDenied(e.to_string()))?
    };
    let before = nodes.len();
    nodes.retain(|(node, s, _)| {
        authz.allows(Resource::Node, &node.name, Level::Read)
            && authz.allows(Resource::Service, &s.service, Level::Read)
    });
    let filtered = nodes.len() != before;
    store.with_rng(|r| nodes.shuffle(r));
    let near = Some(svc.near.as_str())
        .filter(|n| !n.is_empty())
        .or(args.near);
    if near == Some("_agent")
        && let Some(i) = nodes
            .iter()
            .take(10)
            .position(|(n, _, _)| n.name == store.cfg.node_name)
    {
        nodes.swap(0, i);
    }
    if args.limit > 0 {
        nodes.truncate(args.limit);
    }
    // Failover: there is no other datacenter to ask; peer targets are tried (and fail) and
    // counted, unknown datacenters are skipped, as `queryFailover` does.
    let failovers = if nodes.is_empty() {
        svc.failover
            .targets
            .iter()
            .flatten()
            .filter(|t| !t.peer.is_empty())
            .count()
    } else {
        0
    };
    Ok(Execution {
        query: q,
        nodes,
        filtered,
        failovers,
    })
}
