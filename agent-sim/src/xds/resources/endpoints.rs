//! Endpoints (`agent/xds/endpoints.go`): one `ClusterLoadAssignment` per EDS cluster, from the
//! health of the target's connect-capable instances, with Consul's health status and weight
//! (`calculateEndpointHealthAndWeight`); unhealthy instances are marked, not dropped.

use envoy_types::pb::envoy::config::core::v3::{
    Address, HealthStatus, Pipe, SocketAddress, address, socket_address,
};
use envoy_types::pb::envoy::config::endpoint::v3::{
    ClusterLoadAssignment, Endpoint, LbEndpoint, LocalityLbEndpoints, lb_endpoint,
};
use envoy_types::pb::google::protobuf::UInt32Value;

use super::clusters::EdsCluster;
use super::snapshot::{self, Snapshot};

/// The load assignment of every EDS cluster.
pub(crate) fn build(snap: &Snapshot, eds: &[EdsCluster]) -> Vec<ClusterLoadAssignment> {
    eds.iter()
        .map(|c| {
            let instances = snap
                .upstreams
                .iter()
                .find_map(|u| u.endpoints.get(&c.target_id))
                .map(Vec::as_slice)
                .unwrap_or_default();
            let lb = instances
                .iter()
                .map(|ep| {
                    let (healthy, weight) = snapshot::health_and_weight(ep, c.only_passing);
                    let status = if healthy {
                        HealthStatus::Healthy
                    } else {
                        HealthStatus::Unhealthy
                    };
                    LbEndpoint {
                        health_status: status as i32,
                        load_balancing_weight: Some(UInt32Value { value: weight }),
                        ..plain(socket_address(&ep.address, u32::from(ep.port)))
                    }
                })
                .collect();
            ClusterLoadAssignment {
                cluster_name: c.name.clone(),
                endpoints: vec![locality(lb)],
                ..Default::default()
            }
        })
        .collect()
}

/// One locality group (priority 0).
pub(crate) fn locality(lb_endpoints: Vec<LbEndpoint>) -> LocalityLbEndpoints {
    LocalityLbEndpoints {
        lb_endpoints,
        ..Default::default()
    }
}

/// An endpoint at `address`, no health status or weight.
pub(crate) fn plain(address: Address) -> LbEndpoint {
    LbEndpoint {
        host_identifier: Some(lb_endpoint::HostIdentifier::Endpoint(Endpoint {
            address: Some(address),
            ..Default::default()
        })),
        ..Default::default()
    }
}

/// A TCP socket address.
pub(crate) fn socket_address(addr: &str, port: u32) -> Address {
    Address {
        address: Some(address::Address::SocketAddress(SocketAddress {
            address: addr.to_owned(),
            port_specifier: Some(socket_address::PortSpecifier::PortValue(port)),
            ..Default::default()
        })),
    }
}

/// A unix socket address with file mode `mode` (0: Envoy's default).
pub(crate) fn pipe_address(path: &str, mode: u32) -> Address {
    Address {
        address: Some(address::Address::Pipe(Pipe {
            path: path.to_owned(),
            mode,
        })),
    }
}
