//! Pure mapping of a transparent connection's original destination to what the proxy does with
//! it: a mesh upstream (by virtual IP, or by an instance's address), a `DialedDirectly` instance,
//! plain-TCP passthrough (unless the `mesh` entry sets `MeshDestinationsOnly`), or a refusal.

use std::net::{IpAddr, SocketAddr};

use crate::snapshot::{Endpoint, Snapshot, Target, Upstream};

/// What to do with one transparent connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route<'a> {
    /// A mesh upstream, with its usual candidates; `first` (the instance whose address was
    /// dialed) is tried before them.
    Upstream {
        upstream: &'a Upstream,
        first: Option<(&'a Target, &'a Endpoint)>,
    },
    /// An instance whose sidecar allows `DialedDirectly`: mTLS to the original destination itself
    /// (`endpoint`), expecting `target`'s identity.
    Direct {
        upstream: &'a Upstream,
        target: &'a Target,
        endpoint: Endpoint,
    },
    /// Not in the mesh, passthrough on: plain TCP to the original destination.
    Passthrough,
    /// Refused (closed).
    Refuse(Refusal),
}

/// Why a transparent connection is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The original destination is the outbound listener itself: nothing redirected it.
    OwnListener,
    /// Not a virtual IP or instance of any upstream, and passthrough is off.
    Unknown,
}

impl Refusal {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::OwnListener => "the original destination is the outbound listener itself",
            Self::Unknown => "unknown destination (not in the mesh)",
        }
    }
}

fn endpoint_ip(ep: &Endpoint) -> Option<IpAddr> {
    ep.host.parse::<IpAddr>().ok().map(|ip| ip.to_canonical())
}

/// Every (upstream, target, endpoint) of the snapshot, in snapshot order.
fn instances(snap: &Snapshot) -> impl Iterator<Item = (&Upstream, &Target, &Endpoint)> {
    snap.upstreams.iter().flat_map(|u| {
        u.targets
            .iter()
            .flat_map(move |t| t.endpoints.iter().map(move |e| (u, t, e)))
    })
}

/// The mesh destination `dst` names, if any: a virtual IP (any port) of an upstream; else an
/// instance's exact `host:port`; else the IP of a `DialedDirectly` instance (any port). Ties go
/// to the first upstream in snapshot order.
pub(crate) fn mesh(snap: &Snapshot, dst: SocketAddr) -> Option<Route<'_>> {
    let ip = dst.ip().to_canonical();
    if let Some(upstream) = snap.upstreams.iter().find(|u| u.virtual_ips.contains(&ip)) {
        return Some(Route::Upstream {
            upstream,
            first: None,
        });
    }
    if let Some((upstream, t, e)) =
        instances(snap).find(|(_, _, e)| endpoint_ip(e) == Some(ip) && e.port == dst.port())
    {
        return Some(Route::Upstream {
            upstream,
            first: Some((t, e)),
        });
    }
    instances(snap)
        .find(|(_, _, e)| e.dialed_directly && endpoint_ip(e) == Some(ip))
        .map(|(upstream, target, e)| Route::Direct {
            upstream,
            target,
            endpoint: Endpoint {
                host: ip.to_string(),
                port: dst.port(),
                datacenter: e.datacenter.clone(),
                label: format!("{} dialed directly at {dst}", e.label),
                dialed_directly: true,
            },
        })
}

/// The route of a connection whose original destination is `dst`, accepted on a listener whose
/// own addresses are `own` (the listener's and the accepted socket's local address).
pub(crate) fn route<'a>(snap: &'a Snapshot, own: &[SocketAddr], dst: SocketAddr) -> Route<'a> {
    let canonical = SocketAddr::new(dst.ip().to_canonical(), dst.port());
    if own.contains(&dst) || own.contains(&canonical) {
        return Route::Refuse(Refusal::OwnListener);
    }
    if let Some(route) = snap.hooks.route(snap) {
        return route;
    }
    if let Some(route) = mesh(snap, canonical) {
        return route;
    }
    // Consul's outbound listener keeps the `original_destination` passthrough chain unless the
    // mesh entry sets `TransparentProxy.MeshDestinationsOnly` (agent/xds/listeners.go).
    if !snap
        .hooks
        .mesh_destinations_only(snap.mesh.mesh_destinations_only)
    {
        return Route::Passthrough;
    }
    if let Some(route) = snap.hooks.unknown_destination(snap) {
        return route;
    }
    Route::Refuse(Refusal::Unknown)
}
