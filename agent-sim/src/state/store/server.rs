//! The server node every real catalog has, and the `consul` service its leader registers for
//! it (the sim's agent is a client on its own node).

use std::collections::BTreeMap;

use crate::model::service::{Node, NodeService};
use crate::state::config::SimConfig;

/// The name of the server node every catalog has (the sim is a client agent; its servers are
/// elsewhere, like `/v1/status/leader`'s `127.0.0.1:8300`).
pub(crate) const SERVER_NODE: &str = "consul-server";

/// The server node and the `consul` service its leader registers for every server
/// (`leader.go` `handleAliveMember`: ID and name `consul`, the server RPC port 8300, no address,
/// the serf/raft meta). Its ID is derived from the datacenter, so seeded runs stay reproducible.
pub(super) fn server_node(cfg: &SimConfig, index: u64) -> (Node, NodeService) {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("agent-sim server node {}", cfg.datacenter));
    let mut id = [0u8; 16];
    id.copy_from_slice(&digest[..16]);
    let addr = cfg.node_address.clone();
    let tagged = ["lan", "lan_ipv4", "wan", "wan_ipv4"].map(|k| (k.to_owned(), addr.clone()));
    let node = Node {
        id: uuid::Builder::from_random_bytes(id).into_uuid().to_string(),
        name: SERVER_NODE.to_owned(),
        address: addr,
        datacenter: cfg.datacenter.clone(),
        tagged_addresses: BTreeMap::from(tagged),
        meta: BTreeMap::from([
            ("consul-network-segment".to_owned(), String::new()),
            ("consul-version".to_owned(), cfg.version.clone()),
        ]),
        create_index: index,
        modify_index: index,
    };
    let meta = [
        ("non_voter", "false".to_owned()),
        ("raft_version", "3".to_owned()),
        ("read_replica", "false".to_owned()),
        ("serf_protocol_current", "2".to_owned()),
        ("serf_protocol_max", "5".to_owned()),
        ("serf_protocol_min", "1".to_owned()),
        ("version", cfg.version.clone()),
    ];
    let svc = NodeService {
        id: "consul".to_owned(),
        service: "consul".to_owned(),
        port: 8300,
        meta: meta.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        create_index: index,
        modify_index: index,
        ..NodeService::default()
    };
    (node, svc)
}
