//! Interop with a real Envoy 1.40 (installed by `scripts/install-envoy.sh`): delta ADS over this
//! transport is accepted, every push is ACKed, a bad resource is NACKed with Envoy's message.
//! Ignored with the reason where Envoy is absent (see `xds::test_envoy`).

use std::process::Stdio;
use std::time::Duration;

use envoy_types::pb::envoy::config::cluster::v3::{Cluster, cluster};
use envoy_types::pb::envoy::config::core::v3::{
    Address, AggregatedConfigSource, ConfigSource, SocketAddress, address, config_source,
    socket_address,
};
use envoy_types::pb::envoy::config::endpoint::v3::{
    ClusterLoadAssignment, Endpoint, LbEndpoint, LocalityLbEndpoints, lb_endpoint,
};
use envoy_types::pb::envoy::config::listener::v3::{Filter, FilterChain, Listener, filter};
use envoy_types::pb::envoy::extensions::filters::network::tcp_proxy::v3::{TcpProxy, tcp_proxy};
use envoy_types::pb::google::protobuf::{Any, Duration as PbDuration};
use prost::{Message, Name};

use super::tests::{PROXY, start};
use crate::xds::XdsEvent;
use crate::xds::types::{CLUSTER, ENDPOINT, LISTENER, Resource, Resources};

fn addr(port: u32) -> Address {
    Address {
        address: Some(address::Address::SocketAddress(SocketAddress {
            address: "127.0.0.1".into(),
            port_specifier: Some(socket_address::PortSpecifier::PortValue(port)),
            ..Default::default()
        })),
    }
}

fn load_assignment(name: &str, port: u32) -> ClusterLoadAssignment {
    ClusterLoadAssignment {
        cluster_name: name.into(),
        endpoints: vec![LocalityLbEndpoints {
            lb_endpoints: vec![LbEndpoint {
                host_identifier: Some(lb_endpoint::HostIdentifier::Endpoint(Endpoint {
                    address: Some(addr(port)),
                    ..Default::default()
                })),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn resources(endpoint_port: u32, stat_prefix: &str) -> Resources {
    let ads = ConfigSource {
        config_source_specifier: Some(config_source::ConfigSourceSpecifier::Ads(
            AggregatedConfigSource {},
        )),
        resource_api_version: 2, // V3
        ..Default::default()
    };
    let db = Cluster {
        name: "db".into(),
        connect_timeout: Some(PbDuration {
            seconds: 5,
            nanos: 0,
        }),
        cluster_discovery_type: Some(cluster::ClusterDiscoveryType::Type(
            cluster::DiscoveryType::Eds as i32,
        )),
        eds_cluster_config: Some(cluster::EdsClusterConfig {
            eds_config: Some(ads),
            ..Default::default()
        }),
        ..Default::default()
    };
    let tcp = TcpProxy {
        stat_prefix: stat_prefix.into(),
        cluster_specifier: Some(tcp_proxy::ClusterSpecifier::Cluster("db".into())),
        ..Default::default()
    };
    let listener = Listener {
        name: "db:127.0.0.1:0".into(),
        address: Some(addr(0)),
        filter_chains: vec![FilterChain {
            filters: vec![Filter {
                name: "envoy.filters.network.tcp_proxy".into(),
                config_type: Some(filter::ConfigType::TypedConfig(Any {
                    type_url: TcpProxy::type_url(),
                    value: tcp.encode_to_vec(),
                })),
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut r = Resources::default();
    r.insert(CLUSTER, Resource::pack("db", &db));
    r.insert(
        ENDPOINT,
        Resource::pack("db", &load_assignment("db", endpoint_port)),
    );
    r.insert(LISTENER, Resource::pack("db:127.0.0.1:0", &listener));
    r
}

fn bootstrap(grpc_port: u16) -> String {
    format!(
        r#"{{"node":{{"id":"{PROXY}","cluster":"web"}},
"admin":{{"address":{{"socket_address":{{"address":"127.0.0.1","port_value":0}}}}}},
"dynamic_resources":{{
 "lds_config":{{"ads":{{}},"initial_fetch_timeout":"0s","resource_api_version":"V3"}},
 "cds_config":{{"ads":{{}},"initial_fetch_timeout":"0s","resource_api_version":"V3"}},
 "ads_config":{{"api_type":"DELTA_GRPC","transport_api_version":"V3",
   "grpc_services":[{{"initial_metadata":[{{"key":"x-consul-token","value":"t"}}],
     "envoy_grpc":{{"cluster_name":"local_agent"}}}}]}}}},
"static_resources":{{"clusters":[{{"name":"local_agent","type":"STATIC","connect_timeout":"1s",
 "typed_extension_protocol_options":{{"envoy.extensions.upstreams.http.v3.HttpProtocolOptions":{{
   "@type":"type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
   "explicit_http_config":{{"http2_protocol_options":{{}}}}}}}},
 "load_assignment":{{"cluster_name":"local_agent","endpoints":[{{"lb_endpoints":[{{"endpoint":{{
   "address":{{"socket_address":{{"address":"127.0.0.1","port_value":{grpc_port}}}}}}}}}]}}]}}}}]}}}}"#
    )
}

#[tokio::test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
async fn envoy_acks_every_push_and_nacks_a_bad_listener() {
    let bin = crate::xds::test_envoy::envoy("envoy_acks_every_push_and_nacks_a_bad_listener");
    let h = start(false).await;
    h.source.put(PROXY, resources(9, "db"));
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = dir.path().join("bootstrap.json");
    std::fs::write(&cfg, bootstrap(h.addr.port())).expect("write bootstrap");
    let mut envoy = tokio::process::Command::new(&bin)
        .arg("-c")
        .arg(&cfg)
        .args([
            "--disable-hot-restart",
            "--concurrency",
            "1",
            "-l",
            "warning",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn envoy");
    let log = h.control.xds_log();
    let wait = Duration::from_secs(60);
    let acked = |t: &'static str| move |e: &crate::xds::XdsLogEntry| matches!(&e.event, XdsEvent::Ack { type_url, .. } if type_url == t);
    for t in [CLUSTER, ENDPOINT, LISTENER] {
        assert!(
            log.wait_for(wait, acked(t)).await.is_some(),
            "no ACK of {t}"
        );
    }
    assert!(log.nacks().is_empty(), "{:?}", log.nacks());
    let opened = log
        .wait_for(wait, |e| matches!(e.event, XdsEvent::Opened { .. }))
        .await
        .expect("opened");
    assert!(
        matches!(&opened.event, XdsEvent::Opened { token: Some(t), node_id, .. } if t == "t" && node_id == PROXY)
    );
    // A new endpoint is pushed and ACKed.
    let before = log.last_seq();
    h.source.put(PROXY, resources(10, "db"));
    let ack = log
        .wait_for(wait, |e| e.seq > before && acked(ENDPOINT)(e))
        .await;
    assert!(ack.is_some(), "endpoint change not ACKed");
    // An invalid listener (empty tcp_proxy stat_prefix) is NACKed with Envoy's reason.
    h.source.put(PROXY, resources(10, ""));
    let nack = log
        .wait_for(wait, |e| matches!(e.event, XdsEvent::Nack { .. }))
        .await
        .expect("NACK");
    let XdsEvent::Nack {
        type_url, message, ..
    } = &nack.event
    else {
        unreachable!("matched above")
    };
    assert_eq!(type_url, LISTENER);
    assert!(message.contains("StatPrefix"), "{message}");
    // Agent restart: the stream resets, Envoy reconnects and says what it has; every push of
    // the new stream is ACKed.
    h.source.put(PROXY, resources(11, "db"));
    let before = log.last_seq();
    h.control.restart(Duration::from_millis(200)).await;
    let reopened = log
        .wait_for(wait, |e| {
            e.seq > before && matches!(e.event, XdsEvent::Opened { .. })
        })
        .await
        .expect("Envoy reconnected");
    let stream = reopened.stream;
    let seeded = log
        .wait_for(wait, |e| {
            e.stream == stream
                && matches!(&e.event, XdsEvent::Request { type_url, initial_versions, .. }
                    if type_url == CLUSTER && !initial_versions.is_empty())
        })
        .await;
    assert!(
        seeded.is_some(),
        "no initial_resource_versions on reconnect"
    );
    for t in [CLUSTER, LISTENER] {
        let ack = log
            .wait_for(wait, |e| e.stream == stream && acked(t)(e))
            .await;
        assert!(ack.is_some(), "no ACK of {t} after the restart");
    }
    assert_eq!(log.nacks().len(), 1, "{:?}", log.nacks());
    let _ = envoy.kill().await;
}
