//! Shared fuzzing machinery: the proptest budget, sims seeded with services (ACLs off and on),
//! a request sent through the router with a time bound, and the properties every answer must
//! have (no panic, an answer in time, no 5xx outside the documented set).

use std::time::Duration;

use agent_sim::acl::DefaultPolicy;
use agent_sim::duration::GoDuration;
use agent_sim::{AgentSim, Builder, Control};
use axum::Router;
use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Method, Request, Uri};
use http_body_util::BodyExt;
use proptest::test_runner::{Config, FileFailurePersistence};
use serde_json::json;
use tower::ServiceExt;

/// Cases per property in the CI pass; `PROPTEST_CASES=N` overrides it (proptest reads it).
pub(crate) const CI_CASES: u32 = 48;

/// The budget of one property (failing seeds kept in `regressions`, relative to the crate): `CI_CASES` scaled by `weight` percent, unless the environment
/// sets `PROPTEST_CASES` (then that, as proptest's own default would be).
pub(crate) fn config(weight: u32, regressions: &'static str) -> Config {
    let mut c = Config {
        // Integration tests have no `src/lib.rs` beside them: name the file outright.
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(regressions))),
        ..Config::default()
    };
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = (CI_CASES * weight / 100).max(4);
    }
    c.max_shrink_iters = 256;
    c
}

/// The management token of an ACL-enabled sim.
pub(crate) const ROOT: &str = "fuzz-root";
/// An ordinary token: writes `web` and `db`, reads everything.
pub(crate) const ORDINARY: &str = "fuzz-ordinary";

/// A virtual-time bound on one request: above the longest blocking wait (600 s + 1/16 jitter).
pub(crate) const ANSWER_BOUND: Duration = Duration::from_secs(700);

pub(crate) fn builder(acl: bool) -> Builder {
    let b = AgentSim::builder()
        .cluster_id("11111111-2222-3333-4444-555555555555")
        .seed(7)
        .ca_change_jitter(Duration::ZERO)
        .run_checks(false);
    if acl {
        b.acls(ROOT, DefaultPolicy::Deny)
    } else {
        b
    }
}

/// Registers `web` and `db` with sidecars, an intention and a config entry, and (with ACLs) the
/// ordinary token, so that fuzzed paths meet real data.
pub(crate) fn seed(control: &Control, acl: bool) {
    for (name, port) in [("web", 8080), ("db", 5432)] {
        control
            .register(&json!({
                "Name": name, "Port": port,
                "Connect": {"SidecarService": {}},
            }))
            .expect("seed service");
    }
    control
        .put_intention("web", "db", &json!({"Action": "allow"}))
        .expect("seed intention");
    control
        .upsert_config_entry(&json!({"Kind": "service-defaults", "Name": "db", "Protocol": "http"}))
        .expect("seed config entry");
    if acl {
        control
            .create_token_with(
                Some(ORDINARY.into()),
                "service_prefix \"\" { policy = \"read\" }\nservice \"web\" { policy = \"write\" }\nservice \"db\" { policy = \"write\" }\nnode_prefix \"\" { policy = \"read\" }",
                "fuzz ordinary",
            )
            .expect("seed token");
    }
}

/// A sim served through its router (no sockets).
#[derive(Clone)]
pub(crate) struct App {
    pub(crate) router: Router,
}

pub(crate) fn app(acl: bool) -> App {
    let (router, control) = builder(acl).build().expect("sim builds");
    seed(&control, acl);
    App { router }
}

/// A current-thread runtime with a paused clock: blocking queries and latency faults end as soon
/// as nothing else can run, so huge `wait` values cost no real time.
pub(crate) fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime")
}

/// A multi-thread runtime for tests over real sockets.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// One fuzzed request.
#[derive(Debug, Clone)]
pub(crate) struct Req {
    pub(crate) method: Method,
    pub(crate) uri: String,
    pub(crate) headers: Vec<(String, Vec<u8>)>,
    pub(crate) body: Vec<u8>,
}

impl Req {
    pub(crate) fn new(method: Method, uri: impl Into<String>) -> Self {
        Self {
            method,
            uri: uri.into(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    pub(crate) fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    pub(crate) fn header(mut self, name: &str, value: impl Into<Vec<u8>>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The `http::Request`, or `None` when `http` itself refuses the URI or a header (no server
    /// ever sees such a request; the socket tests send those bytes raw).
    fn build(&self) -> Option<Request<Body>> {
        let uri: Uri = self.uri.parse().ok()?;
        let mut r = Request::builder().method(self.method.clone()).uri(uri);
        for (n, v) in &self.headers {
            let n = HeaderName::from_bytes(n.as_bytes()).ok()?;
            let v = HeaderValue::from_bytes(v).ok()?;
            r = r.header(n, v);
        }
        r.body(Body::from(self.body.clone())).ok()
    }
}

/// An answer reduced to what the properties look at.
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) index: Option<u64>,
    pub(crate) content_type: Option<String>,
    pub(crate) text: String,
}

/// Sends `req` through the router. `Ok(None)`: `http` refused to build it. `Err`: no complete
/// answer within [`ANSWER_BOUND`] (a hang). A panic in a handler propagates (the test fails).
pub(crate) async fn send(router: &Router, req: &Req) -> Result<Option<Answer>, String> {
    let Some(built) = req.build() else {
        return Ok(None);
    };
    let call = async {
        let resp = router.clone().oneshot(built).await.expect("infallible");
        let status = resp.status().as_u16();
        let header = |n: &str| {
            resp.headers()
                .get(n)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let index = header("x-consul-index").and_then(|v| v.parse().ok());
        let content_type = header("content-type");
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("body error: {e}"))?
            .to_bytes();
        Ok::<_, String>(Answer {
            status,
            index,
            content_type,
            text: String::from_utf8_lossy(&bytes).into_owned(),
        })
    };
    let Some(bound) = bound_for(req) else {
        return Ok(None);
    };
    match tokio::time::timeout(bound, call).await {
        Ok(a) => a.map(Some),
        Err(_) => Err(format!(
            "no answer within {bound:?}: {} {}",
            req.method, req.uri
        )),
    }
}

/// How long `req` may take: [`ANSWER_BOUND`], except a blocking leaf query, which Consul does not
/// cap (`leafcert` waits `wait` as given), so its own `wait` plus a margin; `None` when that is
/// beyond a year of virtual time (not worth judging: the timer wheel clamps such deadlines).
fn bound_for(req: &Req) -> Option<Duration> {
    let (path, query) = req.uri.split_once('?').unwrap_or((&req.uri, ""));
    if !path.contains("/connect/ca/leaf/") {
        return Some(ANSWER_BOUND);
    }
    let wait = form_urlencoded::parse(query.as_bytes())
        .find(|(k, v)| k == "wait" && !v.is_empty())
        .and_then(|(_, v)| GoDuration::parse(&v).ok())
        .map_or(Duration::ZERO, GoDuration::to_std);
    let bound = ANSWER_BOUND.max(wait + Duration::from_secs(60));
    (bound < Duration::from_secs(365 * 86400)).then_some(bound)
}

/// Checks an answer: a 5xx only from the documented set (see [`allowed_5xx`]), and an error
/// always says what went wrong (404/405 excepted, whose bodies Consul may leave empty).
pub(crate) fn check_answer(req: &Req, a: &Answer) -> Result<(), String> {
    let path = req.uri.split('?').next().unwrap_or_default();
    if a.status >= 500 && !allowed_5xx(req.method.as_str(), path, a) {
        return Err(format!(
            "{} {} answered {} {:?} (not a 5xx Consul gives)",
            req.method, req.uri, a.status, a.text
        ));
    }
    let bodiless = req.method == Method::HEAD || a.status == 404 || a.status == 405;
    if a.status >= 400 && a.text.is_empty() && !bodiless {
        return Err(format!(
            "{} {} answered {} with an empty body",
            req.method, req.uri, a.status
        ));
    }
    Ok(())
}

/// The 5xx answers Consul gives too. Consul's HTTP layer (`agent/http.go`) maps every error
/// that is not an `HTTPError`/ACL/rate-limit error to 500 with the error's text, so:
/// - requests the agent forwards to its servers as writes or signing RPCs (catalog
///   register/deregister, config entries, intentions, CA configuration, discovery-chain
///   compilation, leaf signing) answer any server-side validation error with 500;
/// - elsewhere only these texts: `No known Consul servers` (servers unreachable), filter errors
///   (`Failed to create boolean expression evaluator`), intention match/check parameter errors,
///   the leaf URI error, the TTL update of a check without TTL, and the legacy intention create's
///   `Failed to decode request body`.
///
/// Always exactly 500 with a non-empty plain-text body. Injected `Errors` faults are not judged
/// (the callers fuzz without them or skip the check while one is active).
pub(crate) fn allowed_5xx(method: &str, path: &str, a: &Answer) -> bool {
    const CONSUL_500: &[&str] = &[
        "No known Consul servers",
        "Failed to create boolean expression evaluator",
        "required query parameter",
        "'by' parameter must be one of",
        "URI must be either service, agent, server, or kind",
        "Permission denied",
        "does not have associated TTL",
        "Failed to decode request body: ",
    ];
    const RPC_WRITES: &[&str] = &[
        "/v1/catalog/register",
        "/v1/catalog/deregister",
        "/v1/config",
        "/v1/connect/intentions",
        "/v1/connect/ca/configuration",
        "/v1/discovery-chain/",
    ];
    let rpc =
        (method != "GET" && method != "HEAD" && RPC_WRITES.iter().any(|p| path.starts_with(p)))
            || path.starts_with("/v1/discovery-chain/")
            || path.starts_with("/v1/agent/connect/ca/leaf/");
    a.status == 500
        && a.content_type.as_deref() == Some("text/plain; charset=utf-8")
        && !a.text.is_empty()
        && (rpc || CONSUL_500.iter().any(|p| a.text.contains(p)))
}

/// Percent-encodes every byte outside `unreserved` (for building URIs from fuzzed text).
pub(crate) fn encode(raw: &str) -> String {
    let mut out = String::new();
    for b in raw.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
