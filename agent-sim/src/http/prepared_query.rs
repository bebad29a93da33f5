//! `/v1/query` (`agent/prepared_query_endpoint.go`): create (POST) and list (GET) on
//! `/v1/query`; read, update, delete on `/v1/query/:id`; execute and explain on
//! `/v1/query/:id_or_name/{execute,explain}` (GET only; `?limit`, `?connect`, `?near` accepted).
//! List and read block on the table index like any server read; execute and explain do not
//! block (Consul's `Execute` is not a blocking query: proxies must poll). Their bodies carry the
//! embedded `QueryMeta` fields, as Consul's encoder writes them.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use serde_json::{Map, Value, json};

use super::app::{Ctx, methods};
use super::error::ApiError;
use super::meta::{self, QueryMeta};
use super::query::QueryOpts;
use super::serve::{ReadSpec, server_read};
use crate::model::prepared_query::{self as pq, PreparedQuery};
use crate::state::control::Control;
use crate::state::prepared_queries::{self as queries, ExecuteArgs, Op};

const GENERAL: &str = "OPTIONS,GET,POST";
const SPECIFIC: &str = "OPTIONS,GET,PUT,DELETE";

pub(crate) fn routes() -> Router<Control> {
    Router::new()
        .route("/v1/query", methods(GENERAL, get(list).post(create)))
        .route("/v1/query/", any(specific_root))
        .route("/v1/query/{*rest}", any(specific))
}

fn decode(body: &[u8]) -> Result<PreparedQuery, ApiError> {
    pq::decode(body).map_err(|e| ApiError::bad_request(format!("Request decode failed: {e}")))
}

fn servers(c: &Control) -> Result<(), ApiError> {
    if c.store.servers_down() {
        return Err(ApiError::no_servers());
    }
    Ok(())
}

async fn create(State(c): State<Control>, ctx: Ctx, body: Bytes) -> Result<Response, ApiError> {
    let q = decode(&body)?;
    let authz = c.authz(&ctx)?;
    servers(&c)?;
    let id = queries::apply(&c.store, &authz, Op::Create, q)?;
    Ok(meta::json(&json!({ "ID": id }), ctx.pretty))
}

async fn list(State(c): State<Control>, ctx: Ctx) -> Result<Response, ApiError> {
    let opts = QueryOpts::parse(&ctx.query, &ctx.headers)?;
    let authz = c.authz(&ctx)?;
    let mut filtered = false;
    let a = server_read(&c.store, &opts, ReadSpec::default(), |st| {
        let (index, shown, _) = queries::list(st, &authz);
        Ok((index, serde_json::to_value(shown).unwrap_or(Value::Null)))
    })
    .await?;
    c.store.read(|st| filtered = queries::list(st, &authz).2);
    let mut resp = meta::json_with(&a.body, ctx.pretty, Some(a.meta), a.cache);
    if filtered {
        meta::set(
            resp.headers_mut(),
            "x-consul-results-filtered-by-acls",
            "true",
        );
    }
    Ok(resp)
}

async fn specific_root(
    State(c): State<Control>,
    ctx: Ctx,
    method: Method,
    body: Bytes,
) -> Response {
    dispatch(c, ctx, method, String::new(), body).await
}

async fn specific(
    State(c): State<Control>,
    ctx: Ctx,
    method: Method,
    Path(rest): Path<String>,
    body: Bytes,
) -> Response {
    dispatch(c, ctx, method, rest, body).await
}

async fn dispatch(c: Control, ctx: Ctx, method: Method, rest: String, body: Bytes) -> Response {
    if method == Method::OPTIONS {
        let mut r = StatusCode::OK.into_response();
        meta::set(r.headers_mut(), "allow", SPECIFIC);
        return r;
    }
    if ![Method::GET, Method::PUT, Method::DELETE].contains(&method) {
        return ApiError::method_not_allowed(method.as_str(), SPECIFIC).into_response();
    }
    let sub = [("/execute", true), ("/explain", false)]
        .into_iter()
        .find_map(|(suffix, exec)| rest.strip_suffix(suffix).map(|id| (id.to_owned(), exec)));
    let out = match sub {
        Some(_) if method != Method::GET => {
            Err(ApiError::method_not_allowed(method.as_str(), "GET"))
        }
        Some((id, true)) => execute(c, ctx, id).await,
        Some((id, false)) => explain(c, ctx, id).await,
        None if method == Method::GET => read(c, ctx, rest).await,
        None if method == Method::PUT => update(c, ctx, rest, body).await,
        None => delete(c, ctx, rest).await,
    };
    out.unwrap_or_else(IntoResponse::into_response)
}

async fn read(c: Control, ctx: Ctx, id: String) -> Result<Response, ApiError> {
    let opts = QueryOpts::parse(&ctx.query, &ctx.headers)?;
    let authz = c.authz(&ctx)?;
    let a = server_read(&c.store, &opts, ReadSpec::default(), |st| {
        let (index, q) = queries::get(st, &authz, &id)?;
        Ok((index, json!([q])))
    })
    .await?;
    Ok(meta::json_with(&a.body, ctx.pretty, Some(a.meta), a.cache))
}

async fn update(c: Control, ctx: Ctx, id: String, body: Bytes) -> Result<Response, ApiError> {
    let mut q = if body.is_empty() {
        PreparedQuery::default()
    } else {
        decode(&body)?
    };
    // The ID comes from the URL, not the body.
    q.id = id;
    let authz = c.authz(&ctx)?;
    servers(&c)?;
    queries::apply(&c.store, &authz, Op::Update, q)?;
    Ok(meta::empty_ok())
}

async fn delete(c: Control, ctx: Ctx, id: String) -> Result<Response, ApiError> {
    let q = PreparedQuery {
        id,
        ..PreparedQuery::default()
    };
    let authz = c.authz(&ctx)?;
    servers(&c)?;
    queries::apply(&c.store, &authz, Op::Delete, q)?;
    Ok(meta::empty_ok())
}

/// `parseLimit` and the `connect` flag, with the handler's (500) texts.
fn limit_and_connect(ctx: &Ctx) -> Result<(usize, bool), ApiError> {
    let limit = match ctx.query.get("limit").filter(|l| !l.is_empty()) {
        None => 0,
        Some(l) => {
            let n: i64 = l.parse().map_err(|_| {
                ApiError::from_text(format!(
                    "Bad limit: strconv.Atoi: parsing {}: invalid syntax",
                    crate::go::gotext::go_quote(l)
                ))
            })?;
            usize::try_from(n).unwrap_or(0)
        }
    };
    let connect = match ctx.query.get("connect").filter(|v| !v.is_empty()) {
        None => false,
        Some(v) => match v {
            "1" | "t" | "T" | "TRUE" | "true" | "True" => true,
            "0" | "f" | "F" | "FALSE" | "false" | "False" => false,
            other => {
                return Err(ApiError::from_text(format!(
                    "Error parsing 'connect' value: strconv.ParseBool: parsing {}: invalid syntax",
                    crate::go::gotext::go_quote(other)
                )));
            }
        },
    };
    Ok((limit, connect))
}

/// The `QueryMeta` fields Consul's encoder writes into execute and explain bodies (the index
/// stays 0: neither is a blocking query).
fn with_query_meta(mut body: Map<String, Value>, opts: &QueryOpts, filtered: bool) -> Value {
    let level = if opts.consistent {
        "consistent"
    } else if opts.stale {
        "stale"
    } else {
        "leader"
    };
    for (k, v) in [
        ("Index", json!(0)),
        ("LastContact", json!(0)),
        ("KnownLeader", json!(true)),
        ("ConsistencyLevel", json!(level)),
        ("NotModified", json!(false)),
        ("Backend", json!(0)),
        ("ResultsFilteredByACLs", json!(filtered)),
    ] {
        body.insert(k.into(), v);
    }
    Value::Object(body)
}

async fn execute(c: Control, ctx: Ctx, id: String) -> Result<Response, ApiError> {
    let mut opts = QueryOpts::parse(&ctx.query, &ctx.headers)?;
    let (limit, connect) = limit_and_connect(&ctx)?;
    // Not a blocking query: `?index` is accepted and ignored.
    opts.min_index = 0;
    let token = ctx.token();
    let near = ctx.query.non_empty("near").map(str::to_owned);
    let spec = ReadSpec {
        cache_key: opts.cached.then(|| format!("query:{id}:{limit}:{connect}")),
        ..ReadSpec::default()
    };
    let mut filtered_any = false;
    let a = server_read(&c.store, &opts, spec, |st| {
        let args = ExecuteArgs {
            id_or_name: &id,
            token: token.as_deref(),
            limit,
            connect,
            near: near.as_deref(),
            as_agent: false,
        };
        let (body, filtered) = queries::execute(st, &c.store, &args)?;
        Ok((0, with_query_meta(body, &opts, filtered)))
    })
    .await?;
    if a.body.value()["ResultsFilteredByACLs"] == json!(true) {
        filtered_any = true;
    }
    let mut resp = meta::json_with(
        &a.body,
        ctx.pretty,
        Some(QueryMeta { index: 0, ..a.meta }),
        a.cache,
    );
    if filtered_any {
        meta::set(
            resp.headers_mut(),
            "x-consul-results-filtered-by-acls",
            "true",
        );
    }
    Ok(resp)
}

async fn explain(c: Control, ctx: Ctx, id: String) -> Result<Response, ApiError> {
    let mut opts = QueryOpts::parse(&ctx.query, &ctx.headers)?;
    limit_and_connect(&ctx)?;
    opts.min_index = 0;
    let authz = c.authz(&ctx)?;
    let a = server_read(&c.store, &opts, ReadSpec::default(), |st| {
        let q = queries::explain(st, &authz, &id, "")?;
        let mut body = Map::new();
        body.insert(
            "Query".into(),
            serde_json::to_value(q).unwrap_or(Value::Null),
        );
        Ok((0, with_query_meta(body, &opts, false)))
    })
    .await?;
    Ok(meta::json_with(&a.body, ctx.pretty, Some(a.meta), a.cache))
}
