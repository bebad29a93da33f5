//! Parsing of the transparent-mode fields: `Proxy.Mode`/`Proxy.TransparentProxy` of a
//! registration, `TaggedAddresses` and `Proxy.TransparentProxy` of health entries, a chain's
//! virtual IPs; absent and `null` read as empty.

use serde_json::json;

use super::*;

fn proxy_of(v: Value) -> AgentProxy {
    serde_json::from_value::<AgentService>(v)
        .unwrap()
        .proxy
        .unwrap()
}

#[test]
fn registration_mode_and_transparent_proxy() {
    // The agent's api form (agent-sim tests/api/transparent.rs).
    let p = proxy_of(
        json!({"Kind":"connect-proxy","ID":"web-sidecar-proxy","Proxy":{
        "DestinationServiceName":"web","DestinationServiceID":"web",
        "LocalServiceAddress":"127.0.0.1","LocalServicePort":8080,"Mode":"transparent",
        "TransparentProxy":{"OutboundListenerPort":15001,"DialedDirectly":true},
        "MeshGateway":{},"Expose":{}}}),
    );
    assert_eq!(p.mode, "transparent");
    assert_eq!(
        p.transparent_proxy,
        Some(TransparentProxyConfig {
            outbound_listener_port: 15001,
            dialed_directly: true
        })
    );
    // Omitted when zero; keys may be absent or null.
    let absent = proxy_of(json!({"Proxy":{"DestinationServiceName":"web"}}));
    assert_eq!((absent.mode.as_str(), absent.transparent_proxy), ("", None));
    let nulls = proxy_of(json!({"Proxy":{"Mode":null,"TransparentProxy":null}}));
    assert_eq!((nulls.mode.as_str(), nulls.transparent_proxy), ("", None));
    let partial = proxy_of(json!({"Proxy":{"Mode":"transparent",
        "TransparentProxy":{"DialedDirectly":null}}}));
    assert_eq!(
        partial.transparent_proxy,
        Some(TransparentProxyConfig::default())
    );
    let empty = proxy_of(json!({"Proxy":{"Mode":"direct","TransparentProxy":{}}}));
    assert_eq!(empty.mode, "direct");
    assert_eq!(
        empty.transparent_proxy,
        Some(TransparentProxyConfig::default())
    );
}

#[test]
fn health_entry_virtual_address_and_dialed_directly() {
    let e: HealthEntry = serde_json::from_value(json!({
        "Node":{"Node":"n2","Address":"127.0.0.1","Datacenter":"dc1"},
        "Service":{"Kind":"connect-proxy","ID":"db-proxy","Service":"db-sidecar-proxy",
            "TaggedAddresses":{"consul-virtual":{"Address":"240.0.0.1","Port":21000},
                               "lan_ipv4":{"Address":"127.0.0.1","Port":21000}},
            "Address":"127.0.0.1","Port":21000,
            "Proxy":{"TransparentProxy":{"OutboundListenerPort":15001,"DialedDirectly":true},
                "DestinationServiceName":"db","Mode":"transparent","MeshGateway":{},"Expose":{}}}}))
    .unwrap();
    assert_eq!(
        e.service.tagged_addresses["consul-virtual"],
        TaggedAddress {
            address: "240.0.0.1".into(),
            port: 21000
        }
    );
    let tp = e.service.proxy.and_then(|p| p.transparent_proxy).unwrap();
    assert!(tp.dialed_directly);
    // Absent or null: empty.
    for service in [
        json!({"ID":"a","Port":1}),
        json!({"ID":"a","Port":1,"TaggedAddresses":null,"Proxy":null}),
        json!({"ID":"a","Port":1,"TaggedAddresses":{},"Proxy":{"Mode":""}}),
    ] {
        let e: HealthEntry = serde_json::from_value(json!({"Service": service})).unwrap();
        assert!(e.service.tagged_addresses.is_empty(), "{service}");
        assert_eq!(e.service.proxy.and_then(|p| p.transparent_proxy), None);
    }
}

#[test]
fn chain_virtual_ips_null_or_lists() {
    let chain = |v: Value| {
        serde_json::from_value::<ChainResponse>(json!({"Chain": v}))
            .unwrap()
            .chain
    };
    let none = chain(json!({"ServiceName":"web","AutoVirtualIPs":null,"ManualVirtualIPs":null}));
    assert!(none.auto_virtual_ips.is_empty() && none.manual_virtual_ips.is_empty());
    let absent = chain(json!({"ServiceName":"web"}));
    assert!(absent.auto_virtual_ips.is_empty());
    let some = chain(
        json!({"ServiceName":"web","AutoVirtualIPs":["240.0.0.1"],"ManualVirtualIPs":["10.1.1.1"]}),
    );
    assert_eq!(some.auto_virtual_ips, ["240.0.0.1"]);
    assert_eq!(some.manual_virtual_ips, ["10.1.1.1"]);
}
