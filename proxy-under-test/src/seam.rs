//! The seam: every decision point where a test build may alter the proxy, as hooks that do
//! nothing. This is the default build's `crate::seam`: zero-sized types whose methods are
//! `#[inline]` identities (`Some(x)`, `x`, `None`, `true`), so the core calls them at no cost and
//! the binary holds no altered behaviour. With the test-only cargo feature `sabotage`,
//! `crate::seam` is `sabotage::seam` instead: the same items, doing what `--sabotage NAME` asks.
//!
//! Where the hooks live: [`Hooks`] in every [`Snapshot`] (the data plane asks it) and in the
//! control plane's state; `ClientHooks` in the [`AgentClient`]; `AuthzHooks` in every
//! [`IntentionSet`]; [`HookSet`] in the parsed command line; `OpenConnection` and
//! `PerConnection` beside each open inbound connection.

use std::borrow::Cow;
use std::future::{Ready, ready};
use std::sync::Arc;
use std::time::Duration;

use rustls::ClientConfig;
use rustls_pki_types::CertificateDer;
use tokio::sync::watch;

use crate::agent::types::AgentProxy;
use crate::agent::{AgentClient, AgentTls, Timing};
use crate::authz::{CompiledPermission, Decision, Intention, IntentionSet, RequestInfo, Rule};
use crate::cli::Invocation;
use crate::dataplane::SnapshotRx;
use crate::dataplane::l7::Body;
use crate::dataplane::transparent::Route;
use crate::knobs::Knobs;
use crate::mesh::{MeshEntry, TlsBounds};
use crate::normalize::PathNormalization;
use crate::route::limits::Outlier;
use crate::route::{Lb, RouteTable};
use crate::snapshot::{Endpoint, LocalApp, Snapshot};
use crate::spiffe::ServiceId;
use crate::tls::{ExpectedServer, InboundTls, Leaf, TlsError, TrustRoots};

/// The hooks chosen on the command line: none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct HookSet;

impl HookSet {
    /// The command line's parser, with the flags choosing hooks: none.
    #[inline]
    pub(crate) fn args(command: clap::Command) -> clap::Command {
        command
    }

    /// The hooks chosen in `matches`: none.
    #[inline]
    pub(crate) fn from_matches(_matches: &clap::ArgMatches) -> Self {
        Self
    }

    /// The invocation as the hooks chosen in it run it: unchanged.
    #[inline]
    pub(crate) fn adjust(invocation: Invocation) -> Invocation {
        invocation
    }

    /// The TLS settings for the agent as the hooks use them: unchanged.
    #[inline]
    pub(crate) fn agent_tls(self, tls: AgentTls) -> AgentTls {
        tls
    }
}

/// A request's query parameters as they are sent.
type Query<'a, 'q> = Cow<'a, [(&'q str, String)]>;

/// What the agent client's hooks do: nothing.
#[derive(Debug, Clone, Default)]
pub(crate) struct ClientHooks {}

impl ClientHooks {
    /// The client hooks of `set`.
    #[inline]
    pub(crate) fn new(_set: HookSet) -> Self {
        Self {}
    }

    /// Before a request to the agent: the query and token to send (unchanged, at once).
    #[inline]
    pub(crate) fn before_request<'a, 'q, 't>(
        &self,
        _path: &str,
        query: &'a [(&'q str, String)],
        token: Option<&'t str>,
    ) -> Ready<(Query<'a, 'q>, Option<&'t str>)> {
        ready((Cow::Borrowed(query), token))
    }

    /// After a request to the agent: nothing to note.
    #[inline]
    pub(crate) fn after_request(&self, _result: &Result<reqwest::Response, reqwest::Error>) {}

    /// The index a blocking read sends: `index`.
    #[inline]
    pub(crate) fn blocking_index(&self, _path: &str, _query: &[(&str, String)], index: u64) -> u64 {
        index
    }

    /// The control plane's timing: `timing`.
    #[inline]
    pub(crate) fn timing(&self, timing: Timing) -> Timing {
        timing
    }

    /// Whether the default policy is re-read when the agent answers again after failing: yes.
    #[inline]
    pub(crate) fn policy_follows_recoveries(&self) -> bool {
        true
    }

    /// Whether an L4-only proxy asks for its chains with `OverrideProtocol = "tcp"`: yes.
    #[inline]
    pub(crate) fn l4_override(&self) -> bool {
        true
    }

    /// Whether a request the agent refuses with 403 is sent again without the token: no (the
    /// error stands).
    #[inline]
    pub(crate) fn anonymous_on_403(&self) -> bool {
        false
    }

    /// What to use when the token may not read `service`'s intentions (403): nothing (the
    /// error stands and the proxy fails closed).
    #[inline]
    pub(crate) fn intentions_forbidden(&self, _service: &str) -> Option<Vec<Intention>> {
        None
    }
}

/// What a snapshot's hooks do: nothing.
#[derive(Debug, Clone, Default)]
pub struct Hooks {}

impl Hooks {
    /// The control plane's hooks for `client`.
    #[inline]
    pub(crate) fn from_client(_client: &AgentClient) -> Self {
        Self {}
    }

    /// The hooks of the intention sets the control plane builds.
    #[inline]
    pub(crate) fn authz(&self) -> AuthzHooks {
        AuthzHooks {}
    }

    /// The leaf the control plane installs: `leaf` (`None` would keep the previous one).
    #[inline]
    pub(crate) fn leaf(&self, leaf: Leaf) -> Option<Leaf> {
        Some(leaf)
    }

    /// Whether a root the agent lists is loaded: yes.
    #[inline]
    pub(crate) fn root_usable(&self, _pem: &str) -> bool {
        true
    }

    /// The knobs the snapshot uses, read from `Proxy.Config`: `knobs`.
    #[inline]
    pub(crate) fn knobs(&self, knobs: Knobs) -> Knobs {
        knobs
    }

    /// The local application the snapshot names: `app`.
    #[inline]
    pub(crate) fn local_app(&self, app: LocalApp, _proxy: &AgentProxy) -> LocalApp {
        app
    }

    /// The implicit upstreams a transparent proxy serves: `names`, all of them.
    #[inline]
    pub(crate) fn implicit_upstreams(&self, names: Vec<String>) -> Vec<String> {
        names
    }

    /// The endpoints a target keeps: all of them.
    #[inline]
    pub(crate) fn endpoints(&self, endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
        endpoints
    }

    /// The snapshot the data plane serves from, given the newest one: `snap`.
    #[inline]
    pub(crate) fn serving(snap: Arc<Snapshot>) -> Option<Arc<Snapshot>> {
        Some(snap)
    }

    /// The inbound TLS configuration: `tls`.
    #[inline]
    pub(crate) fn inbound_tls(
        &self,
        tls: InboundTls,
        _snap: &Snapshot,
    ) -> Result<InboundTls, TlsError> {
        Ok(tls)
    }

    /// The peer's identity instead of the one its certificate names: none.
    #[inline]
    pub(crate) fn identify(
        &self,
        _chain: &[CertificateDer<'_>],
        _snap: &Snapshot,
    ) -> Option<Result<ServiceId, String>> {
        None
    }

    /// The L4 decision for a new inbound connection, given the local one: `local`, at once.
    #[inline]
    pub(crate) fn l4_decision(
        &self,
        _snap: &Snapshot,
        _chain: &[CertificateDer<'_>],
        _id: &ServiceId,
        local: Decision,
    ) -> Ready<Decision> {
        ready(local)
    }

    /// How JWT checks are weakened: not at all.
    #[inline]
    pub(crate) fn jwt_weakened(&self) -> crate::jwt::Weakened {
        crate::jwt::Weakened::default()
    }

    /// The `mesh` config entry the snapshot is assembled with: as read.
    #[inline]
    pub(crate) fn mesh_entry(&self, read: Option<MeshEntry>) -> Option<MeshEntry> {
        read
    }

    /// Whether an upstream listener passes the application's own XFCC on: never.
    #[inline]
    pub(crate) fn keep_app_xfcc(&self) -> bool {
        false
    }

    /// How inbound HTTP request paths are normalized, given the snapshot's options: as given.
    #[inline]
    pub(crate) fn path_normalization(&self, configured: PathNormalization) -> PathNormalization {
        configured
    }

    /// The decision for one HTTP request of a connection, given the request's own: `d`.
    #[inline]
    pub(crate) fn request_decision(&self, _conn: &PerConnection, d: Decision) -> Decision {
        d
    }

    /// A response body as it is passed on: `body`.
    #[inline]
    pub(crate) fn response_body(&self, body: Body) -> Body {
        body
    }

    /// The client configuration dialing an upstream: `config`.
    #[inline]
    pub(crate) fn outbound_tls(
        &self,
        config: Arc<ClientConfig>,
        _roots: &TrustRoots,
        _expected: &ExpectedServer,
    ) -> Arc<ClientConfig> {
        config
    }

    /// The filter a chain target's endpoints are read with: `filter`.
    #[inline]
    pub(crate) fn subset_filter<'a>(&self, filter: &'a str) -> &'a str {
        filter
    }

    /// The route a request takes, given the first matching one: `matched`.
    #[inline]
    pub(crate) fn route_index(&self, _table: &RouteTable, matched: Option<usize>) -> Option<usize> {
        matched
    }

    /// The draw choosing a split: `roll`.
    #[inline]
    pub(crate) fn split_roll(&self, roll: u32) -> u32 {
        roll
    }

    /// The retries a request may make, given the route's: `n`.
    #[inline]
    pub(crate) fn max_retries(&self, n: u32) -> u32 {
        n
    }

    /// The route timeout: `t`.
    #[inline]
    pub(crate) fn route_timeout(&self, t: Duration) -> Option<Duration> {
        Some(t)
    }

    /// Whether a route's `PrefixRewrite` is applied: yes.
    #[inline]
    pub(crate) fn applies_prefix_rewrite(&self) -> bool {
        true
    }

    /// Whether request and response header changes are applied: yes.
    #[inline]
    pub(crate) fn applies_header_ops(&self) -> bool {
        true
    }

    /// The requests an upstream may have in flight: `n`.
    #[inline]
    pub(crate) fn in_flight_limit(&self, n: usize) -> usize {
        n
    }

    /// The outlier detection applied: `o`.
    #[inline]
    pub(crate) fn outlier(&self, o: Option<Outlier>) -> Option<Outlier> {
        o
    }

    /// The load balancing applied: `lb`.
    #[inline]
    pub(crate) fn lb(&self, lb: &Lb) -> Lb {
        lb.clone()
    }

    /// Whether an application connection keeps routing with the snapshot it started with: no.
    #[inline]
    pub(crate) fn pin_routes(&self) -> bool {
        false
    }

    /// The route of a transparent connection before its destination is looked up: none.
    #[inline]
    pub(crate) fn route<'a>(&self, _snap: &'a Snapshot) -> Option<Route<'a>> {
        None
    }

    /// The route of a transparent connection to an unknown destination: none (refused).
    #[inline]
    pub(crate) fn unknown_destination<'a>(&self, _snap: &'a Snapshot) -> Option<Route<'a>> {
        None
    }

    /// Whether transparent mode keeps to mesh destinations: as the mesh entry says.
    #[inline]
    pub(crate) fn mesh_destinations_only(&self, configured: bool) -> bool {
        configured
    }

    /// Whether the public listener takes plaintext for the application's port: as the
    /// registration's `MutualTLSMode` says.
    #[inline]
    pub(crate) fn permissive(&self, configured: bool) -> bool {
        configured
    }

    /// The `TLS.Outgoing` bounds applied to upstream connections: as configured.
    #[inline]
    pub(crate) fn tls_outgoing<'a>(&self, configured: &'a TlsBounds) -> &'a TlsBounds {
        configured
    }
}

/// What an intention set's hooks do: nothing.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct AuthzHooks {}

impl AuthzHooks {
    /// The rule governing instead of the first of `matching` (the rules matching the source,
    /// highest precedence first): none.
    #[inline]
    pub(crate) fn governing<'r>(
        &self,
        _matching: impl DoubleEndedIterator<Item = &'r Rule>,
    ) -> Option<Option<&'r Rule>> {
        None
    }

    /// A decision for `source` instead of the set's: none.
    #[inline]
    pub(crate) fn decision(&self, _set: &IntentionSet, _source: &ServiceId) -> Option<Decision> {
        None
    }

    /// Whether `permission` matches `request`, instead of its own answer: none.
    #[inline]
    pub(crate) fn permission_matches(
        &self,
        _permission: &CompiledPermission,
        _request: &RequestInfo<'_>,
    ) -> Option<bool> {
        None
    }
}

/// The hooks of one open inbound connection's supervision: nothing.
#[derive(Debug, Clone, Default)]
pub(crate) struct OpenConnection {}

impl OpenConnection {
    /// The hooks of a connection whose supervision starts now.
    #[inline]
    pub(crate) fn start(_snapshots: &SnapshotRx) -> Self {
        Self {}
    }

    /// The connection's work, run without supervision: never.
    #[inline]
    pub(crate) fn unsupervised(&self, _kill: &watch::Receiver<bool>) -> Option<Unsupervised> {
        None
    }

    /// Why the connection closes when its supervision wakes up: no reason.
    #[inline]
    pub(crate) fn revoked(&self, _snapshots: &SnapshotRx) -> Option<String> {
        None
    }
}

/// An unsupervised run (never happens in this build).
#[derive(Debug)]
pub(crate) enum Unsupervised {}

impl Unsupervised {
    /// Runs `fut`; whether it finished by itself.
    pub(crate) fn run<F>(self, _fut: F) -> Ready<bool> {
        match self {}
    }
}

/// What the request hooks keep per inbound HTTP connection: nothing.
#[derive(Debug, Default)]
pub(crate) struct PerConnection {}
