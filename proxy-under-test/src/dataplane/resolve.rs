//! Endpoint addresses: an IP literal is used as is; a host name is resolved with the system
//! resolver (`tokio::net::lookup_host`) at every connection attempt, so DNS changes are picked
//! up without any caching here. Only addresses come from DNS: the identity an endpoint must prove
//! is always the target service's, never derived from its host name.

use std::net::{IpAddr, SocketAddr};

/// A host name that did not resolve to any address.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ResolveError {
    /// The resolver failed.
    #[error("cannot resolve {host:?}: {source}")]
    Lookup {
        /// The endpoint's host.
        host: String,
        /// The resolver's error.
        source: std::io::Error,
    },
    /// The resolver answered with no address.
    #[error("{host:?} resolved to no address")]
    Empty {
        /// The endpoint's host.
        host: String,
    },
}

/// The host as an IP literal (`10.0.0.5`, `::1`, `[::1]`), if it is one.
pub(crate) fn ip_literal(host: &str) -> Option<IpAddr> {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    bare.parse().ok()
}

/// The addresses to dial for `host:port`, in the resolver's order (IP literals skip DNS).
pub(crate) async fn resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>, ResolveError> {
    if let Some(ip) = ip_literal(host) {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|source| ResolveError::Lookup {
            host: host.to_owned(),
            source,
        })?
        .collect();
    if addrs.is_empty() {
        return Err(ResolveError::Empty {
            host: host.to_owned(),
        });
    }
    tracing::debug!(host, ?addrs, "endpoint host resolved");
    Ok(addrs)
}

#[cfg(test)]
mod tests;
