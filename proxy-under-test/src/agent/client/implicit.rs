//! The reads a transparent proxy derives its implicit upstreams from: the intentions with its
//! service as the source, and the catalog's service names (both index-blocking).

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::Method;

use super::{AgentClient, Blocking};
use crate::agent::AgentError;
use crate::authz::Intention;

impl AgentClient {
    /// `GET /v1/connect/intentions/match?by=source&name=:service`: the intentions `service` is
    /// the source of (exact or `*`), as Consul's own `IntentionUpstreams` reads them.
    pub async fn source_intentions(
        &self,
        service: &str,
        index: u64,
        wait: Duration,
    ) -> Result<Blocking<Vec<Intention>>, AgentError> {
        self.intention_match("source", service, None, index, wait)
            .await
    }

    /// `GET /v1/catalog/services`: the names of every service in the datacenter the token may
    /// read.
    pub async fn catalog_services(
        &self,
        index: u64,
        wait: Duration,
    ) -> Result<Blocking<Vec<String>>, AgentError> {
        let got: Blocking<BTreeMap<String, serde_json::Value>> = self
            .blocking(
                Method::GET,
                "/v1/catalog/services",
                vec![],
                None,
                index,
                wait,
            )
            .await?;
        Ok(Blocking {
            body: got.body.into_keys().collect(),
            index: got.index,
        })
    }
}
