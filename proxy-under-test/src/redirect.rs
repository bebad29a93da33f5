//! `redirect-traffic`: the one-shot, privileged installer of the iptables `nat` rules that send
//! an application's TCP traffic through its transparent sidecar, modelled on Consul's
//! `consul connect redirect-traffic` (`sdk/iptables` + `command/connect/redirecttraffic`).
//!
//! The proxy itself stays unprivileged: this command runs once as root (or with
//! `CAP_NET_ADMIN`) in the application's network namespace, installs the rules and exits.
//!
//! # The rules (Consul's chains and order)
//!
//! * `CONSUL_PROXY_OUTPUT` (jumped to from `nat OUTPUT` for TCP): `RETURN` for the proxy's own
//!   UID (`-m owner --uid-owner`), `RETURN` for `127.0.0.1/32` (loopback bypass for proxy-aware
//!   applications dialing an upstream's local listener), everything else to
//!   `CONSUL_PROXY_REDIRECT` = `REDIRECT --to-port <outbound port>`. Excluded outbound ports,
//!   CIDRs and UIDs are *inserted* on top (`-I`), so they win.
//! * `CONSUL_PROXY_INBOUND` (jumped to from `nat PREROUTING` for TCP): everything to
//!   `CONSUL_PROXY_IN_REDIRECT` = `REDIRECT --to-port <inbound port>`, excluded inbound ports
//!   inserted on top as `RETURN`.
//!
//! # Why the UID-owner method
//!
//! The kernel has to tell the proxy's own connections (which must leave untouched) from the
//! application's (which must be redirected). Matching the socket owner's UID needs nothing from
//! the proxy but running under a dedicated UID, so the proxy keeps no capability at all. The
//! alternatives all cost privilege or portability:
//!
//! * **Packet mark**: the proxy sets `SO_MARK` on its sockets and the rules skip marked
//!   packets. Setting `SO_MARK` needs `CAP_NET_ADMIN` *in the proxy*, which breaks "the proxy is
//!   unprivileged".
//! * **net_cls cgroup classid**: the rules match `-m cgroup --cgroup <classid>` of the proxy's
//!   cgroup. That is a cgroup v1 controller, absent on cgroup v2 hosts (the default nowadays),
//!   and it needs a privileged helper to place the proxy in the cgroup.
//! * **TPROXY target** (mangle table + policy routing): keeps the original destination without
//!   NAT, but the proxy's listener needs `IP_TRANSPARENT`, i.e. `CAP_NET_ADMIN` in the proxy.
//!
//! # Deviations from Consul
//!
//! * Idempotent: Consul's `-N` fails when the chains exist; [`apply`] creates a missing chain
//!   or flushes an existing one and adds the `OUTPUT`/`PREROUTING` jumps only when `iptables
//!   -C` reports them absent, so re-running gives exactly the same ruleset. [`remove`] exists
//!   (Consul has none).
//! * No DNS redirection (`-consul-dns-ip`/`-consul-dns-port`), so no `CONSUL_DNS_REDIRECT`
//!   chain; no `-netns`, `-node-name` or IPv6 (`ip6tables`) rules. Consul has no rule for
//!   traffic to the pod's own IP over `lo` either (Istio does): the app's connection to its own
//!   address goes to the outbound listener like any other, and the proxy's own dial is
//!   `RETURN`ed by its UID.
//! * Ports and UIDs are validated numbers and CIDRs are parsed (Consul passes strings through
//!   to iptables). IPv6 CIDRs are accepted and produce no rule: IPv6 is not redirected at all.
//! * `Proxy.Expose.Checks` is not expanded into the checks' exposed ports (Consul asks the
//!   agent for them); `Expose.Paths[].ListenerPort` is excluded like Consul does.
//! * Besides Consul's `envoy_prometheus_bind_addr` and `envoy_stats_bind_addr`, the port of
//!   this proxy's `metrics_bind_addr` is excluded from inbound redirection.

mod cli;
mod config;
mod exec;
mod rules;

pub use self::cli::{LONG_FLAGS, RedirectArgs, cli_main, run};
pub use self::config::{Cidr, DEFAULT_OUTBOUND_PORT, Exclusions, RedirectConfig};
pub use self::exec::{Applied, Iptables, Removed, apply, remove};
pub use self::rules::{
    INBOUND_CHAIN, INBOUND_REDIRECT_CHAIN, OUTPUT_CHAIN, OUTPUT_REDIRECT_CHAIN, Op, Rule,
    remove_plan, render, rules,
};

use std::path::PathBuf;

use crate::agent::AgentError;

/// Everything that can go wrong; [`RedirectError::kind`] gives a stable machine name.
#[derive(Debug, thiserror::Error)]
pub enum RedirectError {
    /// No iptables binary at any of the places looked at.
    #[error(
        "iptables not found (tried {}); install the iptables package or pass -iptables PATH",
        display_paths(.tried)
    )]
    NotInstalled {
        /// Every path tried, in order.
        tried: Vec<PathBuf>,
    },
    /// iptables ran but was refused (exit status 4, "Permission denied (you must be root)").
    #[error("{command}: needs root or CAP_NET_ADMIN ({stderr})")]
    NotPermitted {
        /// The command line.
        command: String,
        /// iptables' message.
        stderr: String,
    },
    /// iptables ran and failed otherwise.
    #[error("{command} failed ({}): {stderr}", status.map_or("killed by a signal".to_owned(), |s| format!("exit status {s}")))]
    Failed {
        /// The command line.
        command: String,
        /// Exit status (`None`: killed by a signal, or it could not be started).
        status: Option<i32>,
        /// iptables' message.
        stderr: String,
    },
    /// Reading the registration from the agent failed (Consul's wording).
    #[error("failed to fetch proxy service from Consul Agent: {0}")]
    Agent(#[from] AgentError),
    /// The registration is not a proxy, or its ports cannot be derived.
    #[error("{0}")]
    BadRegistration(String),
    /// A flag value or combination is unusable.
    #[error("{0}")]
    BadFlag(String),
}

impl RedirectError {
    /// A stable machine-readable name: `not-installed`, `not-permitted`, `failed`, `agent`,
    /// `bad-registration` or `bad-flag`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NotInstalled { .. } => "not-installed",
            Self::NotPermitted { .. } => "not-permitted",
            Self::Failed { .. } => "failed",
            Self::Agent(_) => "agent",
            Self::BadRegistration(_) => "bad-registration",
            Self::BadFlag(_) => "bad-flag",
        }
    }
}

fn display_paths(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests;
