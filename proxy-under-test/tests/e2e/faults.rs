//! A broken agent: fail static once the proxy has data (agent down, hung, servers unreachable),
//! fail closed before it has any, index reset and agent restart.

use std::net::SocketAddr;
use std::time::Duration;

use agent_sim::faults::Fault;
use proxy_under_test::{Proxy, RunningProxy};
use serde_json::json;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use super::support::*;

/// Sum of `proxy_agent_watch_errors_total` over every watch.
fn watch_errors(proxy: &RunningProxy) -> u64 {
    proxy
        .metrics()
        .render()
        .lines()
        .filter(|l| l.starts_with("proxy_agent_watch_errors_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// `db` with upstream `cache` (one instance) behind the proxy; web allowed, api denied.
async fn world() -> (World, SocketAddr, FakeUpstream) {
    let up = free_port();
    let w = World::new(
        sim_builder(),
        json!({"Config": {"reauthorize_interval_ms": 200},
               "Upstreams": [{"DestinationName": "cache", "LocalBindPort": up}]}),
    )
    .await;
    let c = w.c();
    let cache = FakeUpstream::start(
        "cache-1",
        &c.issue_identity("cache").unwrap(),
        &c.root_pems(),
    )
    .await;
    cache.register(c, "n2", "cache");
    w.allow("web");
    w.deny("api");
    (w, SocketAddr::from(([127, 0, 0, 1], up)), cache)
}

/// The data path while the agent is broken: the open connection, new allowed connections and
/// the upstream keep working, denied ones stay refused.
async fn data_path_holds(w: &World, open: &mut TlsStream<TcpStream>, up: SocketAddr) {
    let (web, api) = (w.probe("web"), w.probe("api"));
    for i in 0..5 {
        round_trip(open, b"still open")
            .await
            .unwrap_or_else(|e| panic!("open connection, round {i}: {e}"));
        web.echo(w.public(), b"new conn")
            .await
            .unwrap_or_else(|e| panic!("new web connection, round {i}: {e}"));
        assert!(
            api.echo(w.public(), b"x").await.is_err(),
            "api allowed in round {i}"
        );
        assert_eq!(
            via_upstream(up).await.as_deref(),
            Ok("cache-1"),
            "upstream, round {i}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[derive(Debug, Clone, Copy)]
enum Broken {
    Down,
    Hung,
    ServersUnreachable,
}

/// Injects `broken` once the proxy serves, waits until the proxy has run into it, checks the
/// data path, then heals the agent and checks a new intention change is enforced.
async fn fail_static(broken: Broken) {
    let (w, up, _cache) = world().await;
    let proxy = w.proxy().await;
    eventually("upstream ready", PATIENCE, || async {
        via_upstream(up).await.is_ok()
    })
    .await;
    let mut open = w.probe("web").connect(w.public()).await.unwrap();
    round_trip(&mut open, b"before").await.unwrap();

    let c = w.c();
    let (seq, errors) = (c.log().last_seq(), watch_errors(&proxy));
    let guard = match broken {
        Broken::Down => c.agent_down(),
        Broken::Hung => c.agent_hung(),
        Broken::ServersUnreachable => c.servers_unreachable(),
    };
    match broken {
        Broken::Down | Broken::ServersUnreachable => {
            eventually("the proxy ran into the outage", PATIENCE, || async {
                watch_errors(&proxy) > errors
            })
            .await;
        }
        Broken::Hung => {
            // Provoke a new request (the blocked intentions query returns), which then hangs.
            c.put_intention("other", "db", &json!({"Action": "deny"}))
                .unwrap();
            let hung = c
                .log()
                .wait_for(PATIENCE, |e| e.seq > seq && e.status.is_none())
                .await;
            assert!(hung.is_some(), "no request reached the hung agent");
        }
    }
    data_path_holds(&w, &mut open, up).await;
    drop(guard);

    // Healed: a new intention change is picked up.
    w.deny("web");
    let web = w.probe("web");
    eventually("deny after recovery", PATIENCE, || async {
        !web.works(w.public()).await
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_static_agent_down() {
    fail_static(Broken::Down).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_static_agent_hung() {
    fail_static(Broken::Hung).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_static_servers_unreachable() {
    fail_static(Broken::ServersUnreachable).await;
}

/// Whether anything accepts TCP connections on `addr`.
async fn accepts(addr: SocketAddr) -> bool {
    TcpStream::connect(addr).await.is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_closed_until_the_first_complete_configuration() {
    let w = World::basic().await;
    w.allow("web");
    let c = w.c();
    let seq = c.log().last_seq();
    let leaf_errors = c.inject(Fault::Errors {
        status: 500,
        body: "injected leaf failure".into(),
        path_prefix: Some("/v1/agent/connect/ca/leaf/".into()),
    });
    let starting = tokio::spawn(Proxy::new(w.client(), "db-sidecar-proxy").start());
    let failed = c
        .log()
        .wait_for(PATIENCE, |e| {
            e.seq > seq && e.path.starts_with("/v1/agent/connect/ca/leaf/") && e.status == Some(500)
        })
        .await;
    assert!(failed.is_some(), "the proxy never asked for its leaf");
    stays("nothing listens without a leaf", 10, || async {
        !accepts(w.public()).await
    })
    .await;
    assert!(!starting.is_finished());
    drop(leaf_errors);
    let proxy = tokio::time::timeout(PATIENCE, starting)
        .await
        .expect("proxy ready after the leaf arrived")
        .unwrap()
        .unwrap();
    w.probe("web")
        .echo(proxy.inbound_addr(), b"now")
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_closed_when_servers_are_unreachable_from_the_start() {
    let w = World::basic().await;
    w.allow("web");
    let outage = w.c().servers_unreachable();
    let starting = tokio::spawn(Proxy::new(w.client(), "db-sidecar-proxy").start());
    stays("nothing listens without data", 20, || async {
        !accepts(w.public()).await
    })
    .await;
    drop(outage);
    let proxy = tokio::time::timeout(PATIENCE * 2, starting)
        .await
        .expect("proxy ready after the servers came back")
        .unwrap()
        .unwrap();
    w.probe("web")
        .echo(proxy.inbound_addr(), b"now")
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_reset_does_not_stall_the_watches() {
    let w = World::basic().await;
    w.allow("web");
    let _proxy = w.proxy().await;
    let web = w.probe("web");
    web.echo(w.public(), b"x").await.unwrap();
    let seq = w.c().log().last_seq();
    w.c().reset_indexes();
    // The proxy notices the index went backwards and starts over with a non-blocking read.
    let restarted = w
        .c()
        .log()
        .wait_for(PATIENCE, |e| {
            e.seq > seq && e.path == "/v1/connect/intentions/match" && e.index.is_none()
        })
        .await;
    assert!(
        restarted.is_some(),
        "intentions watch did not reset its index"
    );
    w.deny("web");
    eventually("deny after the index reset", PATIENCE, || async {
        !web.works(w.public()).await
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_restart_is_survived() {
    let (w, up, _cache) = world().await;
    let proxy = w.proxy().await;
    let web = w.probe("web");
    let mut open = web.connect(w.public()).await.unwrap();
    round_trip(&mut open, b"before").await.unwrap();
    w.c().restart(Duration::from_millis(500)).await;
    round_trip(&mut open, b"after restart").await.unwrap();
    web.echo(w.public(), b"new").await.unwrap();
    assert_eq!(via_upstream(up).await.as_deref(), Ok("cache-1"));
    w.deny("web");
    eventually("deny after the restart", PATIENCE, || async {
        !web.works(w.public()).await
    })
    .await;
    // The upstream still follows health after the restart.
    w.c()
        .set_check(agent_sim::CheckUpdate {
            node: Some("n2".into()),
            check_id: "cache-1-alive".into(),
            status: "critical".into(),
            output: None,
        })
        .unwrap();
    eventually("critical instance dropped", PATIENCE, || async {
        via_upstream(up).await.is_err()
    })
    .await;
    drop(proxy);
}
