//! The upstream listeners: `cache` (TCP, one fake mTLS instance) takes proptest garbage from an
//! app that half-closes or vanishes, and `api` (`grpc`, h2c from the app, no instance) takes bad
//! prefaces, hostile frames and random frames. The proxy keeps serving both, and its connections
//! on either side (accepted from the app, dialed to the instance) return to the baseline.

use std::net::SocketAddr;

use bytes::Bytes;
use http::Request;
use http_body_util::Empty;
use hyper_util::rt::{TokioExecutor, TokioIo};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use serde_json::json;
use tokio::net::TcpStream;

use super::child::{FD_SLACK, ProxyChild};
use super::frames::{h2_attacks, random_frames};
use super::raw::*;
use crate::e2e::support::*;

struct Upstreams {
    /// Kept alive: the sim the proxy reads.
    _world: World,
    child: ProxyChild,
    cache: SocketAddr,
    api: SocketAddr,
    instance: FakeUpstream,
}

async fn upstreams() -> Upstreams {
    let (cache_port, api_port) = (free_port(), free_port());
    let (w, child) = world(
        json!({"Upstreams": [
            {"DestinationName": "cache", "LocalBindPort": cache_port},
            {"DestinationName": "api", "LocalBindPort": api_port, "Config": {"protocol": "grpc"}},
        ]}),
        None,
    )
    .await;
    w.c()
        .upsert_config_entry(
            &json!({"Kind": "service-defaults", "Name": "api", "Protocol": "grpc"}),
        )
        .unwrap();
    let c = w.c();
    let instance = FakeUpstream::start(
        "cache-1",
        &c.issue_identity("cache").unwrap(),
        &c.root_pems(),
    )
    .await;
    instance.register(c, "node-1", "cache");
    let cache = SocketAddr::from(([127, 0, 0, 1], cache_port));
    let api = SocketAddr::from(([127, 0, 0, 1], api_port));
    eventually("cache reachable", PATIENCE, || async {
        via_upstream(cache).await.is_ok()
    })
    .await;
    let u = Upstreams {
        _world: w,
        child,
        cache,
        api,
        instance,
    };
    assert_eq!(h2c_status(api).await, Ok(503), "api has no instance");
    u
}

/// A good h2c request to the `api` listener; its status (503 `no healthy upstream`).
async fn h2c_status(api: SocketAddr) -> Result<u16, String> {
    let fut = async {
        let tcp = TcpStream::connect(api).await.map_err(|e| e.to_string())?;
        let (mut s, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        let req = Request::get("http://api/")
            .body(Empty::<Bytes>::new())
            .map_err(|e| e.to_string())?;
        let resp = s.send_request(req).await.map_err(|e| e.to_string())?;
        Ok(resp.status().as_u16())
    };
    tokio::time::timeout(PATIENCE, fut)
        .await
        .map_err(|_| "h2c request timed out".to_owned())?
}

impl Upstreams {
    async fn assert_serves(&mut self, after: &str) {
        self.child.assert_alive(after);
        assert_eq!(
            via_upstream(self.cache).await.as_deref(),
            Ok("cache-1"),
            "cache after {after}"
        );
        assert_eq!(h2c_status(self.api).await, Ok(503), "api after {after}");
    }

    async fn settles(&self, fds: usize, what: &str) {
        let c = &self.child;
        let ports = [
            self.cache.port(),
            self.api.port(),
            self.instance.addr.port(),
        ];
        eventually(what, PATIENCE, || async {
            c.accepted_on(ports[0]) == 0
                && c.accepted_on(ports[1]) == 0
                && c.dialed_to(ports[2]) == 0
                && c.fds() <= fds + FD_SLACK
        })
        .await;
    }
}

#[test]
fn garbage_on_the_upstream_listeners() {
    let rt = runtime();
    let _in_rt = rt.enter();
    let mut u = rt.block_on(upstreams());
    let fds = u.child.fds();
    let mut runner = TestRunner::new(config());
    let strategy = (
        prop::collection::vec(any::<u8>(), 0..4096),
        prop::bool::ANY,
        prop::bool::ANY,
    );
    let result = runner.run(&strategy, |(bytes, vanish, to_api)| {
        let then = if vanish {
            Then::Vanish
        } else {
            Then::HalfClose
        };
        let addr = if to_api { u.api } else { u.cache };
        let closed = rt.block_on(attack(addr, &bytes, then, PATIENCE));
        prop_assert!(closed.is_some(), "still open after {} bytes", bytes.len());
        Ok(())
    });
    u.child.assert_alive("upstream garbage");
    result.unwrap_or_else(|e| panic!("{e}"));
    rt.block_on(async {
        u.assert_serves("garbage").await;
        u.settles(fds, "upstream garbage connections closed").await;
    });
}

#[test]
fn hostile_h2c_on_the_grpc_upstream_listener() {
    let rt = runtime();
    let _in_rt = rt.enter();
    let mut u = rt.block_on(upstreams());
    let fds = u.child.fds();
    for (what, bytes) in h2_attacks() {
        let closed = rt.block_on(attack(u.api, &bytes, Then::HalfClose, PATIENCE));
        assert!(
            closed.is_some(),
            "{what}: the proxy neither answered nor closed"
        );
        rt.block_on(u.assert_serves(what));
    }
    let mut runner = TestRunner::new(config());
    let result = runner.run(&random_frames(), |bytes| {
        let closed = rt.block_on(attack(u.api, &bytes, Then::HalfClose, PATIENCE));
        prop_assert!(closed.is_some(), "never closed");
        prop_assert_eq!(rt.block_on(h2c_status(u.api)), Ok(503));
        Ok(())
    });
    u.child.assert_alive("random frames");
    result.unwrap_or_else(|e| panic!("{e}"));
    rt.block_on(async {
        u.assert_serves("random frames").await;
        u.settles(fds, "h2c attackers closed").await;
    });
}
