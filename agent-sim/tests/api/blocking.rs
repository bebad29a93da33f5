//! Blocking queries over loopback HTTP: index blocking and its timeout, wakeups on change,
//! index reset, hash blocking, leaf renewal on rotation, and wakeup suppression.

use std::time::Duration;

use serde_json::json;

use super::support::{builder, net};

#[tokio::test]
async fn roots_block_until_rotation() {
    let n = net(builder()).await;
    let first = n.get("/v1/agent/connect/ca/roots").await.unwrap();
    let idx = first.index();
    let path = format!("/v1/agent/connect/ca/roots?index={idx}&wait=30s");
    let blocked = tokio::spawn({
        let client = n.client.clone();
        let url = n.url(&path);
        async move { client.get(url).send().await.unwrap() }
    });
    n.control()
        .log()
        .wait_for(Duration::from_secs(10), |e| {
            e.blocking && e.path.ends_with("/roots")
        })
        .await
        .unwrap();
    assert!(!blocked.is_finished(), "no change yet: still blocked");
    n.control().rotate_ca(true).unwrap();
    let resp = blocked.await.unwrap();
    let new_idx: u64 = resp.headers()["x-consul-index"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(new_idx > idx);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(
        body["Roots"].as_array().unwrap().len(),
        2,
        "old and new root listed"
    );
}

#[tokio::test]
async fn wait_timeout_returns_current_data() {
    let n = net(builder()).await;
    let idx = n.get("/v1/agent/connect/ca/roots").await.unwrap().index();
    let started = std::time::Instant::now();
    let r = n
        .get(&format!(
            "/v1/agent/connect/ca/roots?index={idx}&wait=200ms"
        ))
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(
        (r.status, r.index()),
        (200, idx),
        "timeout is a 200 with the same index"
    );
    // An index from the future blocks until the timeout and returns the current, smaller one.
    let r = n
        .get(&format!(
            "/v1/agent/connect/ca/roots?index={}&wait=100ms",
            idx + 1000
        ))
        .await
        .unwrap();
    assert_eq!(r.index(), idx);
}

#[tokio::test]
async fn older_index_returns_at_once_and_bad_params_are_400() {
    let n = net(builder()).await;
    let r = n
        .get("/v1/health/connect/db?index=1&wait=10m")
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(
        n.get("/v1/health/connect/db?index=x").await.unwrap().text,
        "Invalid index"
    );
    assert_eq!(
        n.get("/v1/health/connect/db?wait=5").await.unwrap().text,
        "Invalid wait time"
    );
}

#[tokio::test]
async fn index_reset_wakes_blocked_queries_with_a_smaller_index() {
    let n = net(builder()).await;
    n.control()
        .register(&json!({"Name": "db", "Port": 9090, "Connect": {"SidecarService": {}}}))
        .unwrap();
    let idx = n.get("/v1/health/connect/db").await.unwrap().index();
    let blocked = tokio::spawn({
        let url = n.url(&format!("/v1/health/connect/db?index={idx}&wait=60s"));
        let client = n.client.clone();
        async move { client.get(url).send().await.unwrap() }
    });
    n.control()
        .log()
        .wait_for(Duration::from_secs(10), |e| e.blocking)
        .await
        .unwrap();
    n.control().reset_indexes();
    let resp = blocked.await.unwrap();
    let after: u64 = resp.headers()["x-consul-index"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(after < idx, "index went backwards: {after} < {idx}");
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body.as_array().unwrap().len(), 1, "data survived the reset");
}

#[tokio::test]
async fn agent_service_hash_blocking() {
    let n = net(builder()).await;
    n.control()
        .register(&json!({"Name": "db", "Port": 9090, "Connect": {"SidecarService": {}}}))
        .unwrap();
    let r = n.get("/v1/agent/service/db-sidecar-proxy").await.unwrap();
    let hash = r.header("x-consul-contenthash").unwrap().to_owned();
    let t = n
        .get(&format!(
            "/v1/agent/service/db-sidecar-proxy?hash={hash}&wait=100ms"
        ))
        .await
        .unwrap();
    assert_eq!(
        t.header("x-consul-contenthash"),
        Some(hash.as_str()),
        "timeout: same hash"
    );
    let blocked = tokio::spawn({
        let url = n.url(&format!("/v1/agent/service/db-sidecar-proxy?hash={hash}"));
        let client = n.client.clone();
        async move { client.get(url).send().await.unwrap() }
    });
    n.control()
        .log()
        .wait_for(Duration::from_secs(10), |e| {
            e.hash.is_some() && e.wait.is_none()
        })
        .await
        .unwrap();
    n.control()
        .register(
            &json!({"Name": "db", "Port": 9090, "Connect": {"SidecarService": {"Proxy": {
            "Upstreams": [{"DestinationName": "cache", "LocalBindPort": 9191}]}}}}),
        )
        .unwrap();
    let resp = blocked.await.unwrap();
    let new_hash = resp.headers()["x-consul-contenthash"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_ne!(new_hash, hash);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["Proxy"]["Upstreams"][0]["DestinationName"], "cache");
}

#[tokio::test]
async fn leaf_blocking_wakes_with_a_new_leaf_after_rotation() {
    let n = net(builder().ca_change_jitter(Duration::ZERO)).await;
    let first = n.get("/v1/agent/connect/ca/leaf/db").await.unwrap();
    let leaf: serde_json::Value = first.json();
    let blocked = tokio::spawn({
        let url = n.url(&format!(
            "/v1/agent/connect/ca/leaf/db?index={}",
            first.index()
        ));
        let client = n.client.clone();
        async move { client.get(url).send().await.unwrap() }
    });
    n.control()
        .log()
        .wait_for(Duration::from_secs(10), |e| {
            e.blocking && e.path.contains("/leaf/")
        })
        .await
        .unwrap();
    n.control().rotate_ca(true).unwrap();
    let resp = blocked.await.unwrap();
    let new: serde_json::Value = resp.json().await.unwrap();
    assert_ne!(new["SerialNumber"], leaf["SerialNumber"]);
    let pem = new["CertPEM"].as_str().unwrap();
    assert_eq!(
        pem.matches("BEGIN CERTIFICATE").count(),
        2,
        "leaf + cross-signed intermediate"
    );
}

#[tokio::test]
async fn leaf_renews_before_expiry() {
    let n = net(builder().leaf_ttl(Duration::from_secs(3))).await;
    let first = n.get("/v1/agent/connect/ca/leaf/db").await.unwrap();
    let url = format!(
        "/v1/agent/connect/ca/leaf/db?index={}&wait=20s",
        first.index()
    );
    let renewed = n.get(&url).await.unwrap();
    let (a, b) = (first.json(), renewed.json());
    assert_ne!(
        a["SerialNumber"], b["SerialNumber"],
        "a fresh leaf at renewal time"
    );
    let old_expiry = time::OffsetDateTime::parse(
        a["ValidBefore"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    assert!(
        time::OffsetDateTime::now_utc() < old_expiry,
        "renewed before the old one expired"
    );
}

#[tokio::test]
async fn intention_match_suppresses_unchanged_wakeups() {
    let n = net(builder()).await;
    let c = n.control();
    c.put_intention("web", "db", &json!({"Action": "allow"}))
        .unwrap();
    let idx = n
        .get("/v1/connect/intentions/match?by=destination&name=db")
        .await
        .unwrap()
        .index();
    let blocked = tokio::spawn({
        let url = n.url(&format!(
            "/v1/connect/intentions/match?by=destination&name=db&index={idx}&wait=60s"
        ));
        let client = n.client.clone();
        async move { client.get(url).send().await.unwrap() }
    });
    c.log()
        .wait_for(Duration::from_secs(10), |e| {
            e.blocking && e.path.ends_with("/match")
        })
        .await
        .unwrap();
    c.put_intention("web", "cache", &json!({"Action": "deny"}))
        .unwrap();
    // The config index moved, but db's match set did not: the query must still be blocked.
    // Staying blocked can only be observed over time: give a wrong wakeup the chance to happen.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !blocked.is_finished(),
        "woke although db's intentions did not change"
    );
    c.put_intention("api", "db", &json!({"Action": "deny"}))
        .unwrap();
    let body: serde_json::Value = blocked.await.unwrap().json().await.unwrap();
    assert_eq!(
        body["db"].as_array().unwrap().len(),
        2,
        "woke for the change that matters"
    );
}

/// A watcher that re-arms on the index of the answer it was just given blocks with that
/// answer's remembered digest (not a second render): it must still stay blocked through a write
/// that leaves its answer unchanged, and answer the next one that changes it.
#[tokio::test]
async fn intention_match_rearmed_after_an_answer_still_suppresses() {
    let n = net(builder()).await;
    let c = n.control();
    c.put_intention("web", "db", &json!({"Action": "allow"}))
        .unwrap();
    let mut idx = n
        .get("/v1/connect/intentions/match?by=destination&name=db")
        .await
        .unwrap()
        .index();
    for (round, source) in ["api", "batch", "cron"].into_iter().enumerate() {
        let blocked = tokio::spawn({
            let url = n.url(&format!(
                "/v1/connect/intentions/match?by=destination&name=db&index={idx}&wait=60s"
            ));
            let client = n.client.clone();
            async move { client.get(url).send().await.unwrap() }
        });
        c.log()
            .wait_for(Duration::from_secs(10), |e| {
                e.blocking && e.path.ends_with("/match") && e.index == Some(idx)
            })
            .await
            .unwrap();
        c.put_intention(source, "cache", &json!({"Action": "deny"}))
            .unwrap();
        // Staying blocked can only be observed over time: give a wrong wakeup the chance.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !blocked.is_finished(),
            "round {round}: woke although db's intentions did not change"
        );
        c.put_intention(source, "db", &json!({"Action": "deny"}))
            .unwrap();
        let resp = blocked.await.unwrap();
        let next: u64 = resp.headers()["x-consul-index"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        let body: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(
            body["db"].as_array().unwrap().len(),
            round + 2,
            "round {round}: woke for the change that matters"
        );
        assert!(next > idx, "round {round}: a newer index");
        idx = next;
    }
}
