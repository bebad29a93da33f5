//! Shared helpers: a sim driven through its router (no sockets) or over loopback HTTP, and
//! snapshot filters for values that change every run.

use agent_sim::{AgentSim, Builder, Control, Listening};
use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

/// A response reduced to what tests look at.
#[derive(Debug)]
pub(crate) struct Resp {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) text: String,
}

impl Resp {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub(crate) fn index(&self) -> u64 {
        self.header("x-consul-index")
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no index: {self:?}"))
    }
}

/// A sim served through its router.
#[derive(Clone)]
pub(crate) struct App {
    pub(crate) router: Router,
    pub(crate) control: Control,
}

pub(crate) fn builder() -> Builder {
    AgentSim::builder()
        .cluster_id("11111111-2222-3333-4444-555555555555")
        .seed(7)
        .run_checks(false)
}

pub(crate) fn app(b: Builder) -> App {
    let (router, control) = b.build().expect("sim builds");
    App { router, control }
}

impl App {
    pub(crate) async fn call(
        &self,
        method: Method,
        uri: &str,
        token: Option<&str>,
        body: Option<&str>,
    ) -> Resp {
        let mut req = Request::builder().method(method).uri(uri);
        if let Some(t) = token {
            req = req.header("X-Consul-Token", t);
        }
        let req = req
            .body(body.map_or_else(Body::empty, |b| Body::from(b.to_owned())))
            .unwrap();
        let resp = self.router.clone().oneshot(req).await.unwrap();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        Resp {
            status,
            headers,
            text: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    pub(crate) async fn get(&self, uri: &str) -> Resp {
        self.call(Method::GET, uri, None, None).await
    }

    pub(crate) async fn put(&self, uri: &str, body: &str) -> Resp {
        self.call(Method::PUT, uri, None, Some(body)).await
    }

    pub(crate) async fn post(&self, uri: &str, body: &str) -> Resp {
        self.call(Method::POST, uri, None, Some(body)).await
    }
}

/// A sim on a loopback port, with a client.
pub(crate) struct Net {
    pub(crate) sim: Listening,
    pub(crate) client: reqwest::Client,
}

pub(crate) async fn net(b: Builder) -> Net {
    let sim = b.start().await.expect("sim starts");
    // reqwest may be built with `rustls-no-provider` (the reference proxy's feature, unified in a
    // workspace build): it then needs a process-wide provider, even for plain HTTP.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .unwrap();
    Net { sim, client }
}

impl Net {
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.sim.url())
    }

    pub(crate) async fn get(&self, path: &str) -> Result<Resp, reqwest::Error> {
        let r = self.client.get(self.url(path)).send().await?;
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let text = r.text().await?;
        Ok(Resp {
            status,
            headers,
            text,
        })
    }

    pub(crate) fn control(&self) -> &Control {
        self.sim.control()
    }
}

/// Snapshot filters for run-dependent values (PEMs, key IDs, serials, times, UUIDs, hashes).
pub(crate) fn filters() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            r"-----BEGIN [A-Z ]+-----(\\n|\n)[A-Za-z0-9+/=\\n]+-----END [A-Z ]+-----(\\n|\n)?",
            "[pem]",
        ),
        (r"\b[0-9a-f]{2}(:[0-9a-f]{2}){7,}\b", "[colon-hex]"),
        (r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z", "[time]"),
        (
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "[uuid]",
        ),
        (
            r#""ContentHash": "[0-9a-f]+""#,
            r#""ContentHash": "[hash]""#,
        ),
        (r#""pri-[0-9a-z]{8}\.consul"#, r#""pri-[id].consul"#),
    ]
}

/// Asserts a JSON snapshot with the run-dependent values filtered.
#[macro_export]
macro_rules! assert_wire {
    ($name:expr, $value:expr) => {
        insta::with_settings!({ filters => $crate::api::support::filters() }, {
            insta::assert_json_snapshot!($name, $value);
        });
    };
}
