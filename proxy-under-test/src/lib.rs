//! proxy-under-test: the reference Consul Connect sidecar proxy (L4 + L7).
//!
//! The control plane ([`agent`]) keeps an immutable [`Snapshot`] fresh with blocking queries
//! against the local Consul agent and publishes it through a `tokio::sync::watch` channel; the
//! data plane ([`DataPlane`]) binds its listeners only once a complete snapshot exists (fail
//! closed), and from then on serves from memory alone (fail static): inbound mTLS with local
//! authorization from intentions (per connection, or per HTTP request for HTTP services), and
//! one local listener per upstream dialing healthy endpoints over mTLS; in transparent mode, one
//! outbound listener mapping redirected connections to upstreams by their original destination.
//!
//! Knobs are read from the registration's `Proxy.Config`; see [`knobs`] for names and defaults.
//!
//! [`redirect`] is the separate, one-shot, privileged `redirect-traffic` command that installs
//! the iptables rules of transparent proxying (the proxy itself stays unprivileged).
//!
//! Modules: [`cli`] (the command line and its entry point), [`proxy`] (control plane and data
//! plane wired together), [`agent`] (the control plane: agent client, watches, snapshot
//! assembly), [`snapshot`] (the immutable configuration), [`dataplane`] (listeners, inbound,
//! upstreams, transparent mode), [`normalize`] (HTTP request paths, as Envoy normalizes them),
//! [`mesh`] (the `mesh` config entry: normalization, TLS bounds, XFCC),
//! [`authz`] (intentions), [`jwt`] (JWT requirements: providers, keys, token checks), [`tls`] and [`spiffe`] (certificates and identities), [`knobs`],
//! [`metrics`], [`redirect`]. [`seam`] holds the hooks the core calls at each point a test
//! build may alter: zero-sized no-ops in the default build; with the test-only cargo feature
//! `sabotage`, the seam is the `sabotage` module's, which applies `--sabotage NAME`. The three
//! declarations choosing between them below, and the default build's guard test, are the only
//! places outside `sabotage` that name the feature.
#![forbid(unsafe_code)]

pub mod agent;
pub mod authz;
pub mod cli;
pub mod dataplane;
pub mod jwt;
pub mod knobs;
pub mod mesh;
pub mod metrics;
pub mod normalize;
pub mod proxy;
pub mod redirect;
pub mod route;
#[cfg(feature = "sabotage")]
pub mod sabotage;
#[cfg(feature = "sabotage")]
pub use sabotage::seam;
#[cfg(not(feature = "sabotage"))]
pub mod seam;
pub mod snapshot;
pub mod spiffe;
pub mod tls;

pub use agent::{AgentClient, AgentError, ControlPlane, Timing};
pub use authz::{Decision, DefaultPolicy, Intention, IntentionSet};
pub use cli::cli_main;
pub use dataplane::{DataPlane, DataPlaneError, RunningDataPlane, SnapshotRx, UnixBindError};
pub use knobs::{Knobs, Protocol};
pub use metrics::Metrics;
pub use proxy::{Proxy, ProxyError, RunningProxy};
pub use redirect::{RedirectConfig, RedirectError};
pub use snapshot::{Bind, Endpoint, LocalApp, Snapshot, Target, Transparent, Upstream};
pub use tls::{Leaf, TrustRoots};

#[cfg(test)]
mod testutil;
