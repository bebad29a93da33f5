//! Faults: agent down, hung, injected errors, servers unreachable (cached data only), latency,
//! restart, and the control API that drives them.

use std::time::Duration;

use agent_sim::config::IntentionDefault;
use agent_sim::faults::Fault;
use serde_json::json;

use super::support::{builder, net};

#[tokio::test]
async fn agent_down_refuses_then_recovers_on_the_same_port() {
    let n = net(builder()).await;
    assert_eq!(n.get("/v1/status/leader").await.unwrap().status, 200);
    let down = n.control().agent_down();
    let mut refused = false;
    for _ in 0..50 {
        match tokio::net::TcpStream::connect(n.sim.addr()).await {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                refused = true;
                break;
            }
            _ => tokio::task::yield_now().await,
        }
    }
    assert!(refused, "connections are refused while down");
    drop(down);
    let mut back = None;
    for _ in 0..200 {
        if let Ok(r) = n.get("/v1/status/leader").await {
            back = Some(r.status);
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(back, Some(200));
}

#[tokio::test]
async fn hung_agent_accepts_but_never_answers_until_released() {
    let n = net(builder()).await;
    let hung = n.control().agent_hung();
    let pending = tokio::spawn({
        let url = n.url("/v1/status/leader");
        let client = n.client.clone();
        async move { client.get(url).send().await.map(|r| r.status().as_u16()) }
    });
    n.control()
        .log()
        .wait_for(Duration::from_secs(10), |e| e.path == "/v1/status/leader")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!pending.is_finished(), "no answer while hung");
    drop(hung);
    assert_eq!(pending.await.unwrap().unwrap(), 200);
}

#[tokio::test]
async fn injected_errors_and_latency() {
    let n = net(builder()).await;
    let g = n.control().inject(Fault::Errors {
        status: 503,
        body: "boom".into(),
        path_prefix: Some("/v1/health/".into()),
    });
    let r = n.get("/v1/health/connect/db").await.unwrap();
    assert_eq!((r.status, r.text.as_str()), (503, "boom"));
    assert_eq!(
        n.get("/v1/status/leader").await.unwrap().status,
        200,
        "other paths unaffected"
    );
    drop(g);
    assert_eq!(n.get("/v1/health/connect/db").await.unwrap().status, 200);
    let _slow = n.control().inject(Fault::Latency {
        delay: Duration::from_millis(150),
        path_prefix: None,
    });
    let t = std::time::Instant::now();
    n.get("/v1/status/leader").await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(150));
}

#[tokio::test]
async fn servers_unreachable_serves_cached_data_only() {
    let n = net(builder()).await;
    let c = n.control();
    c.put_intention("web", "db", &json!({"Action": "allow"}))
        .unwrap();
    let roots = n.get("/v1/agent/connect/ca/roots").await.unwrap();
    n.get("/v1/health/connect/db?cached").await.unwrap();
    let leaf = n.get("/v1/agent/connect/ca/leaf/db").await.unwrap().json();
    let _outage = c.servers_unreachable();
    // Wait until the background transition has frozen the agent's view.
    let mut frozen = false;
    for _ in 0..200 {
        if n.get("/v1/status/leader").await.unwrap().status == 500 {
            frozen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(frozen);
    let r = n.get("/v1/agent/connect/ca/roots").await.unwrap();
    assert_eq!((r.status, r.header("x-cache")), (200, Some("HIT")));
    assert!(r.header("age").is_some());
    assert_eq!(r.json(), roots.json());
    let r = n.get("/v1/health/connect/db?cached").await.unwrap();
    assert_eq!((r.status, r.header("x-cache")), (200, Some("HIT")));
    let r = n.get("/v1/health/connect/db").await.unwrap();
    assert_eq!(
        (r.status, r.text.as_str()),
        (500, "No known Consul servers"),
        "uncached reads fail"
    );
    let r = n.get("/v1/health/connect/web?cached").await.unwrap();
    assert_eq!(r.status, 500, "never cached: fails");
    let again = n.get("/v1/agent/connect/ca/leaf/db").await.unwrap().json();
    assert_eq!(
        again["SerialNumber"], leaf["SerialNumber"],
        "the cached leaf is still served"
    );
    let r = n
        .get(&format!(
            "/v1/agent/connect/ca/roots?index={}",
            roots.index()
        ))
        .await
        .unwrap();
    assert_eq!(
        r.status, 500,
        "a blocked cached reader learns the refresh failed"
    );
    // Changes made on the servers meanwhile are invisible to the agent's cache.
    c.put_intention("web", "db", &json!({"Action": "deny"}))
        .unwrap();
    let td = c.trust_domain();
    let body = json!({"Target": "db", "ClientCertURI": format!("spiffe://{td}/ns/default/dc/dc1/svc/web")}).to_string();
    let r = n
        .client
        .post(n.url("/v1/agent/connect/authorize"))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        500,
        "authorize for a never-fetched target has no cache to use"
    );
}

#[tokio::test]
async fn restart_keeps_data_with_new_indexes() {
    let n = net(builder()).await;
    n.control()
        .register(&json!({"Name": "db", "Port": 9090}))
        .unwrap();
    let before = n.get("/v1/health/service/db").await.unwrap().index();
    n.control().restart(Duration::from_millis(50)).await;
    let mut after = None;
    for _ in 0..200 {
        if let Ok(r) = n.get("/v1/health/service/db").await {
            after = Some(r);
            break;
        }
        tokio::task::yield_now().await;
    }
    let after = after.expect("agent back");
    assert!(after.index() < before);
    assert_eq!(after.json().as_array().unwrap().len(), 1);
    assert_eq!(
        n.get("/v1/agent/connect/ca/roots")
            .await
            .unwrap()
            .header("x-cache"),
        Some("MISS"),
        "agent cache emptied"
    );
}

#[tokio::test]
async fn control_api_over_http() {
    let n = net(builder().control_bind("127.0.0.1:0".parse().unwrap())).await;
    let ctl = format!("http://{}/_sim", n.sim.control_addr().unwrap());
    let r = n
        .client
        .put(format!("{ctl}/faults"))
        .body(r#"{"Kind":"agent-down","For":"10s"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let id = r.json::<serde_json::Value>().await.unwrap()["ID"]
        .as_u64()
        .unwrap();
    let list: serde_json::Value = n
        .client
        .get(format!("{ctl}/faults"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list[0]["Fault"]["Kind"], "agent-down");
    let r = n
        .client
        .delete(format!("{ctl}/faults/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = n
        .client
        .put(format!("{ctl}/faults"))
        .body(r#"{"Kind":"meteor"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let r = n
        .client
        .post(format!("{ctl}/forge"))
        .body(r#"{"Kind":"expired","Service":"web"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let id: serde_json::Value = r.json().await.unwrap();
    assert!(
        id["CertChainPEM"]
            .as_str()
            .unwrap()
            .contains("BEGIN CERTIFICATE")
    );
    let r = n
        .client
        .post(format!("{ctl}/ca/rotate"))
        .body(r#"{"CrossSign":false}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let roots: serde_json::Value = n
        .client
        .get(format!("{ctl}/ca/roots"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(roots["RootPEMs"].as_array().unwrap().len(), 2);
    let log: serde_json::Value = n
        .client
        .get(format!("{ctl}/log"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        log["Entries"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| !e["path"].as_str().unwrap().starts_with("/_sim"))
    );
}

#[tokio::test]
async fn restart_can_come_back_with_another_default_intention_policy() {
    let a = super::support::app(builder().default_intention_policy(IntentionDefault::Deny));
    let policy =
        |r: &super::support::Resp| r.json()["DebugConfig"]["DefaultIntentionPolicy"].clone();
    assert_eq!(policy(&a.get("/v1/agent/self").await), "deny");
    // Absent: unchanged.
    let r = a.post("/_sim/restart", r#"{"DownFor":"10ms"}"#).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(policy(&a.get("/v1/agent/self").await), "deny");
    let r = a
        .post(
            "/_sim/restart",
            r#"{"DownFor":"10ms","DefaultIntentionPolicy":"allow"}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(policy(&a.get("/v1/agent/self").await), "allow");
    let r = a
        .post("/_sim/restart", r#"{"DefaultIntentionPolicy":"maybe"}"#)
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("DefaultIntentionPolicy"), "{}", r.text);
    assert_eq!(policy(&a.get("/v1/agent/self").await), "allow");
    // "" unsets it.
    let r = a
        .post(
            "/_sim/restart",
            r#"{"DownFor":"10ms","DefaultIntentionPolicy":""}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(policy(&a.get("/v1/agent/self").await), "");
}
