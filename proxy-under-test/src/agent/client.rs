//! HTTP client for the local agent: HTTP or HTTPS (reqwest over rustls, configured by
//! [`AgentTls`]), `X-Consul-Token` on every request, blocking parameters, index/hash headers, and
//! Consul-style error texts.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;

use crate::mesh::MeshEntry;

use super::recovery::AgentHealth;
use super::types::{AgentService, CaRoots, ChainResponse, HealthEntry, LeafCert, QueryExecution};
use super::{AgentError, AgentTls};
use crate::authz::{DefaultPolicy, Intention};
use crate::seam::ClientHooks;

mod implicit;

/// Result of a blocking read: the body and the returned index (or content hash).
#[derive(Debug, Clone, PartialEq)]
pub struct Blocking<T> {
    /// The decoded body.
    pub body: T,
    /// `X-Consul-Index` (0 when absent).
    pub index: u64,
}

/// HTTP timeout of requests that do not block (first reads, reads after an error, agent/self,
/// the services list). A blocking read may legitimately take `wait`; these may not.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// An agent HTTP client.
#[derive(Debug, Clone)]
pub struct AgentClient {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
    request_timeout: Duration,
    health: AgentHealth,
    /// What this client's hooks do around each request (nothing in the default build).
    pub(crate) hooks: ClientHooks,
}

/// Normalizes `CONSUL_HTTP_ADDR` forms: `host:port`, `http://host:port[/prefix]`,
/// `https://host:port[/prefix]`. Unix sockets are not supported by this proxy (clear error).
pub fn normalize_addr(addr: &str) -> Result<String, AgentError> {
    let addr = addr.trim();
    if addr.is_empty() {
        return Ok("http://127.0.0.1:8500".to_owned());
    }
    let lower = addr.to_ascii_lowercase();
    if lower.starts_with("unix://") {
        return Err(AgentError::UnsupportedAddress(addr.to_owned()));
    }
    let with_scheme = if lower.starts_with("http://") || lower.starts_with("https://") {
        addr.to_owned()
    } else if addr.contains("://") {
        return Err(AgentError::UnsupportedAddress(addr.to_owned()));
    } else {
        format!("http://{addr}")
    };
    Ok(with_scheme.trim_end_matches('/').to_owned())
}

/// Encodes one path segment (service names and IDs are plain, but be safe).
pub(crate) fn seg(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// HTTP timeout for a blocking request: above `wait + wait/16` (the server's jitter) + slack.
pub fn http_timeout(wait: Duration) -> Duration {
    wait + wait / 16 + Duration::from_secs(5)
}

impl AgentClient {
    /// A client for `addr` (see [`normalize_addr`]) sending `token` when set; plain HTTP
    /// unless `addr` is `https://` (then with the default [`AgentTls`]: see [`Self::with_tls`]).
    pub fn new(addr: &str, token: Option<String>) -> Result<Self, AgentError> {
        Self::with_tls(addr, token, &AgentTls::default())
    }

    /// A client for `addr` sending `token` when set, speaking TLS as `tls` says to an
    /// `https://` agent.
    pub fn with_tls(addr: &str, token: Option<String>, tls: &AgentTls) -> Result<Self, AgentError> {
        let base = normalize_addr(addr)?;
        let tls = tls.client_config(base.starts_with("https://"))?;
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .tls_backend_preconfigured(tls)
            .build()
            .map_err(|e| AgentError::Transport(e.to_string()))?;
        Ok(Self {
            http,
            base,
            token: token.filter(|t| !t.is_empty()),
            request_timeout: REQUEST_TIMEOUT,
            health: AgentHealth::default(),
            hooks: ClientHooks::default(),
        })
    }

    /// This client (and the control plane built on it) with `hooks` around each request.
    pub(crate) fn with_hooks(mut self, hooks: ClientHooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// Overrides the timeout of non-blocking requests ([`REQUEST_TIMEOUT`] by default).
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The HTTP timeout for a read that blocks (`wait` + the server's jitter + slack) or not.
    fn timeout_for(&self, blocking: bool, wait: Duration) -> Duration {
        if blocking {
            http_timeout(wait)
        } else {
            self.request_timeout
        }
    }

    /// Changes each time the agent answers again after a failed request (no answer or a 5xx).
    pub(crate) fn recoveries(&self) -> tokio::sync::watch::Receiver<u64> {
        self.health.recoveries()
    }

    /// The base URL, e.g. `http://127.0.0.1:8500`.
    pub fn base(&self) -> &str {
        &self.base
    }

    pub(crate) async fn send(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&serde_json::Value>,
        timeout: Duration,
    ) -> Result<reqwest::Response, AgentError> {
        let token = self.token.as_deref();
        match self
            .send_as(method.clone(), path, query, body, timeout, token)
            .await
        {
            Err(AgentError::Status { status: 403, .. })
                if token.is_some() && self.hooks.anonymous_on_403() =>
            {
                self.send_as(method, path, query, body, timeout, None).await
            }
            other => other,
        }
    }

    /// One request to the agent with `token` (if any).
    async fn send_as(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&serde_json::Value>,
        timeout: Duration,
        token: Option<&str>,
    ) -> Result<reqwest::Response, AgentError> {
        let (query, token) = self.hooks.before_request(path, query, token).await;
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .query(&*query)
            .timeout(timeout);
        if let Some(t) = token {
            req = req.header("X-Consul-Token", t);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let sent = req.send().await;
        self.health
            .observe(sent.as_ref().is_ok_and(|r| !r.status().is_server_error()));
        self.hooks.after_request(&sent);
        let resp = sent.map_err(|e| {
            if e.is_timeout() {
                AgentError::Timeout
            } else {
                AgentError::Transport(e.to_string())
            }
        })?;
        if resp.status() != StatusCode::OK {
            let status = resp.status().as_u16();
            let body = resp.text().await.unwrap_or_default();
            return Err(AgentError::Status {
                status,
                body: body.trim_end().to_owned(),
            });
        }
        Ok(resp)
    }

    pub(crate) async fn decode<T: DeserializeOwned>(
        resp: reqwest::Response,
    ) -> Result<T, AgentError> {
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| AgentError::Transport(e.to_string()))?;
        serde_json::from_slice(&bytes).map_err(|e| AgentError::Decode(e.to_string()))
    }

    async fn blocking<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        mut query: Vec<(&str, String)>,
        body: Option<&serde_json::Value>,
        index: u64,
        wait: Duration,
    ) -> Result<Blocking<T>, AgentError> {
        let index = self.hooks.blocking_index(path, &query, index);
        if index > 0 {
            query.push(("index", index.to_string()));
            query.push(("wait", format!("{}ms", wait.as_millis())));
        }
        let timeout = self.timeout_for(index > 0, wait);
        let resp = self.send(method, path, &query, body, timeout).await?;
        let index = header(&resp, "X-Consul-Index")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        Ok(Blocking {
            body: Self::decode(resp).await?,
            index,
        })
    }

    /// `GET /v1/agent/service/:id`, hash-blocking when `hash` is given. Returns the service and
    /// its `X-Consul-ContentHash`.
    pub async fn service(
        &self,
        id: &str,
        hash: Option<&str>,
        wait: Duration,
    ) -> Result<(AgentService, String), AgentError> {
        let mut query = Vec::new();
        if let Some(h) = hash.filter(|h| !h.is_empty()) {
            query.push(("hash", h.to_owned()));
            query.push(("wait", format!("{}ms", wait.as_millis())));
        }
        let path = format!("/v1/agent/service/{}", seg(id));
        let timeout = self.timeout_for(!query.is_empty(), wait);
        let resp = self.send(Method::GET, &path, &query, None, timeout).await?;
        let hash = header(&resp, "X-Consul-ContentHash").unwrap_or_default();
        Ok((Self::decode(resp).await?, hash))
    }

    /// `GET /v1/agent/services` (for `-sidecar-for`).
    pub async fn services(&self) -> Result<BTreeMap<String, AgentService>, AgentError> {
        let resp = self
            .send(
                Method::GET,
                "/v1/agent/services",
                &[],
                None,
                self.request_timeout,
            )
            .await?;
        Self::decode(resp).await
    }

    /// `GET /v1/agent/connect/ca/leaf/:service?index=&wait=`.
    pub async fn leaf(
        &self,
        service: &str,
        index: u64,
        wait: Duration,
    ) -> Result<Blocking<LeafCert>, AgentError> {
        let path = format!("/v1/agent/connect/ca/leaf/{}", seg(service));
        self.blocking(Method::GET, &path, vec![], None, index, wait)
            .await
    }

    /// `GET /v1/agent/connect/ca/roots?index=&wait=`.
    pub async fn roots(&self, index: u64, wait: Duration) -> Result<Blocking<CaRoots>, AgentError> {
        self.blocking(
            Method::GET,
            "/v1/agent/connect/ca/roots",
            vec![],
            None,
            index,
            wait,
        )
        .await
    }

    /// `GET /v1/config/mesh?index=&wait=`: the `mesh` config entry, if one is stored. The list
    /// form blocks on the config-entries index whether or not the entry exists (the single-entry
    /// form answers 404 without blocking). An agent without the endpoint (404) has no entry.
    pub async fn mesh(
        &self,
        index: u64,
        wait: Duration,
    ) -> Result<Blocking<Option<MeshEntry>>, AgentError> {
        let got: Result<Blocking<Option<Vec<MeshEntry>>>, AgentError> = self
            .blocking(Method::GET, "/v1/config/mesh", vec![], None, index, wait)
            .await;
        match got {
            Ok(b) => Ok(Blocking {
                index: b.index,
                body: b.body.and_then(|v| v.into_iter().next()),
            }),
            Err(AgentError::Status { status: 404, .. }) => Ok(Blocking {
                index: 0,
                body: None,
            }),
            Err(e) => Err(e),
        }
    }

    /// `GET /v1/config/jwt-provider?index=&wait=`: every `jwt-provider` entry (Consul's own
    /// proxies watch the whole list too). A sidecar's `service:write` token may read them; an
    /// agent without the kind (404) has none.
    pub async fn jwt_providers(
        &self,
        index: u64,
        wait: Duration,
    ) -> Result<Blocking<Vec<crate::jwt::provider::ProviderEntry>>, AgentError> {
        let got: Result<Blocking<Option<Vec<_>>>, AgentError> = self
            .blocking(
                Method::GET,
                "/v1/config/jwt-provider",
                vec![],
                None,
                index,
                wait,
            )
            .await;
        match got {
            Ok(b) => Ok(Blocking {
                index: b.index,
                body: b.body.unwrap_or_default(),
            }),
            Err(AgentError::Status { status: 404, .. }) => Ok(Blocking {
                index: 0,
                body: Vec::new(),
            }),
            Err(e) => Err(e),
        }
    }

    /// `GET /v1/connect/intentions/match?by=destination&name=<service>&cached` (`null` = none).
    /// `?cached` (here, for chains and for health) lets the agent answer from its cache while the
    /// servers are unreachable.
    pub async fn intentions(
        &self,
        service: &str,
        index: u64,
        wait: Duration,
    ) -> Result<Blocking<Vec<Intention>>, AgentError> {
        let cached = Some(("cached", String::new()));
        match self
            .intention_match("destination", service, cached, index, wait)
            .await
        {
            Err(AgentError::Status { status: 403, .. })
                if let Some(list) = self.hooks.intentions_forbidden(service) =>
            {
                Ok(Blocking {
                    body: list,
                    index: 1,
                })
            }
            other => other,
        }
    }

    /// `GET /v1/connect/intentions/match?by=<by>&name=<service>` (and `extra`): the list the
    /// answer holds under `service` (`null` = none).
    pub(crate) async fn intention_match(
        &self,
        by: &str,
        service: &str,
        extra: Option<(&str, String)>,
        index: u64,
        wait: Duration,
    ) -> Result<Blocking<Vec<Intention>>, AgentError> {
        let mut query = vec![("by", by.to_owned()), ("name", service.to_owned())];
        query.extend(extra);
        let got: Blocking<BTreeMap<String, Option<Vec<Intention>>>> = self
            .blocking(
                Method::GET,
                "/v1/connect/intentions/match",
                query,
                None,
                index,
                wait,
            )
            .await?;
        Ok(Blocking {
            body: got.body.get(service).cloned().flatten().unwrap_or_default(),
            index: got.index,
        })
    }

    /// `POST /v1/discovery-chain/:name`, with `{"OverrideProtocol": <protocol>}` when the
    /// upstream's `Config.protocol` is set (as Consul's proxycfg asks).
    pub async fn discovery_chain(
        &self,
        name: &str,
        compile_dc: &str,
        protocol: Option<&str>,
        index: u64,
        wait: Duration,
    ) -> Result<Blocking<ChainResponse>, AgentError> {
        let path = format!("/v1/discovery-chain/{}", seg(name));
        let mut query = vec![("cached", String::new())];
        if !compile_dc.is_empty() {
            query.push(("compile-dc", compile_dc.to_owned()));
        }
        // As Consul's proxycfg: the upstream's configured protocol overrides the chain's.
        let body = match protocol {
            Some(p) => serde_json::json!({ "OverrideProtocol": p }),
            None => serde_json::json!({}),
        };
        self.blocking(Method::POST, &path, query, Some(&body), index, wait)
            .await
    }

    /// `GET /v1/health/connect/:service?passing=1&cached[&dc=][&filter=]`.
    pub async fn health_connect(
        &self,
        service: &str,
        dc: &str,
        filter: &str,
        index: u64,
        wait: Duration,
    ) -> Result<Blocking<Vec<HealthEntry>>, AgentError> {
        let path = format!("/v1/health/connect/{}", seg(service));
        let mut query = vec![("passing", "1".to_owned()), ("cached", String::new())];
        if !dc.is_empty() {
            query.push(("dc", dc.to_owned()));
        }
        if !filter.is_empty() {
            query.push(("filter", filter.to_owned()));
        }
        self.blocking(Method::GET, &path, query, None, index, wait)
            .await
    }

    /// `GET /v1/query/:name/execute?connect=true` (as Consul's proxycfg executes a prepared-query
    /// upstream: `Connect: true`, the upstream's datacenter). Not a blocking query.
    pub async fn execute_query(
        &self,
        name: &str,
        dc: &str,
    ) -> Result<Blocking<QueryExecution>, AgentError> {
        let path = format!("/v1/query/{}/execute", seg(name));
        let mut query = vec![("connect", "true".to_owned())];
        if !dc.is_empty() {
            query.push(("dc", dc.to_owned()));
        }
        self.blocking(Method::GET, &path, query, None, 0, Duration::ZERO)
            .await
    }

    /// The default intention policy from `/v1/agent/self` (`DebugConfig`), falling back to the
    /// `X-Consul-Default-ACL-Policy` header when the token may not read agent/self (403).
    pub async fn default_policy(&self) -> Result<DefaultPolicy, AgentError> {
        let timeout = self.request_timeout;
        match self
            .send(Method::GET, "/v1/agent/self", &[], None, timeout)
            .await
        {
            Ok(resp) => {
                let header_policy = header(&resp, "X-Consul-Default-ACL-Policy");
                let body: serde_json::Value = Self::decode(resp).await?;
                Ok(policy_from_self(&body, header_policy.as_deref()))
            }
            Err(AgentError::Status { status: 403, .. }) => {
                // Any other endpoint carries the header; roots needs no ACL.
                let resp = self
                    .send(
                        Method::GET,
                        "/v1/agent/connect/ca/roots",
                        &[],
                        None,
                        timeout,
                    )
                    .await?;
                let h = header(&resp, "X-Consul-Default-ACL-Policy").unwrap_or_default();
                Ok(DefaultPolicy::resolve("", true, &h))
            }
            Err(e) => Err(e),
        }
    }
}

/// Reads `DebugConfig.DefaultIntentionPolicy`, `DebugConfig.ACLsEnabled` and
/// `DebugConfig.ACLResolverSettings.ACLDefaultPolicy` (header as a fallback for the latter).
pub(crate) fn policy_from_self(body: &serde_json::Value, header: Option<&str>) -> DefaultPolicy {
    let dc = &body["DebugConfig"];
    let intention = dc["DefaultIntentionPolicy"].as_str().unwrap_or("");
    let acls = dc["ACLsEnabled"].as_bool().unwrap_or(true);
    let acl_default = dc["ACLResolverSettings"]["ACLDefaultPolicy"]
        .as_str()
        .or(header)
        .unwrap_or("allow");
    DefaultPolicy::resolve(intention, acls, acl_default)
}

fn header(resp: &reqwest::Response, name: &str) -> Option<String> {
    resp.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}
