//! The in-process data plane with broken behaviours, against the reference on the same
//! fixtures (the data-plane tests' CA, probes and echo app).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Empty, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rcgen::{
    CertificateParams, DnType, ExtendedKeyUsagePurpose as Eku, IsCa, KeyPair,
    PKCS_ECDSA_P256_SHA256, SanType,
};
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::authz::{DefaultPolicy, HttpMatch, Intention, IntentionSet, Permission};
use crate::dataplane::{DataPlane, RunningDataPlane};
use crate::knobs::{Knobs, Protocol};
use crate::sabotage::{Hooks, Sabotage, Sabotages};
use crate::snapshot::Snapshot;
use crate::testutil::*;

pub(super) type Tx = watch::Sender<Option<Arc<Snapshot>>>;

/// `db`'s snapshot in front of `app`, with `set` applied to the data plane and the intentions.
pub(super) fn snap(
    ca: &TestCa,
    app: SocketAddr,
    ixns: Vec<Intention>,
    policy: DefaultPolicy,
    knobs: Knobs,
    set: Sabotages,
) -> Snapshot {
    let mut s = snapshot(ca, app, vec![], policy, knobs, vec![]);
    s.intentions = Arc::new(IntentionSet::new("db", ixns).with_sabotage(set));
    s.hooks = Hooks::new(set);
    s
}

pub(super) async fn start(snap: Snapshot) -> (Tx, RunningDataPlane) {
    let (tx, rx) = watch::channel(Some(Arc::new(snap)));
    (tx, DataPlane::new(rx).start().await.unwrap())
}

/// Whether `leaf` gets its bytes echoed through a data plane running `set` (the reference when
/// `set` is empty).
async fn works(
    set: Sabotages,
    ca: &TestCa,
    ixns: &[Intention],
    policy: DefaultPolicy,
    leaf: Option<&TestLeaf>,
) -> bool {
    let app = echo_app().await;
    let knobs = Knobs::default();
    let (_tx, dp) = start(snap(ca, app, ixns.to_vec(), policy, knobs, set)).await;
    let cfg = client_config(leaf, &ca.roots(), "db", false);
    probe(dp.inbound_addr(), cfg, b"ping").await.as_deref() == Ok(&b"ping"[..])
}

/// (reference, sabotaged) outcomes of one probe.
async fn compare(
    s: Sabotage,
    ca: &TestCa,
    ixns: &[Intention],
    policy: DefaultPolicy,
    leaf: Option<&TestLeaf>,
) -> (bool, bool) {
    (
        works(Sabotages::NONE, ca, ixns, policy, leaf).await,
        works(s.into(), ca, ixns, policy, leaf).await,
    )
}

fn web_allow_api_deny() -> Vec<Intention> {
    vec![
        Intention::l4("web", "db", true),
        Intention::l4("api", "db", false),
    ]
}

/// A leaf whose URI SAN names `uri_service` and whose Subject CN is `cn`.
fn leaf_with_cn(ca: &TestCa, uri_service: &str, cn: &str) -> TestLeaf {
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
    let mut p = CertificateParams::default();
    p.distinguished_name.push(DnType::CommonName, cn);
    p.subject_alt_names = vec![SanType::URI(svc_uri(TD, uri_service).try_into().unwrap())];
    p.is_ca = IsCa::ExplicitNoCa;
    p.extended_key_usages = vec![Eku::ServerAuth, Eku::ClientAuth];
    p.use_authority_key_identifier_extension = true;
    let cert = p.signed_by(&key, &ca.issuer).unwrap();
    TestLeaf {
        chain: vec![cert.der().clone()],
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    }
}

#[tokio::test]
async fn ignore_deny_lets_a_denied_source_in() {
    let ca = TestCa::new("Consul CA 1");
    let ixns = web_allow_api_deny();
    let api = ca.service_leaf("api");
    let got = compare(
        Sabotage::IgnoreDeny,
        &ca,
        &ixns,
        DefaultPolicy::DENY,
        Some(&api),
    )
    .await;
    assert_eq!(got, (false, true));
    let web = ca.service_leaf("web");
    let got = compare(
        Sabotage::IgnoreDeny,
        &ca,
        &ixns,
        DefaultPolicy::DENY,
        Some(&web),
    )
    .await;
    assert_eq!(got, (true, true));
}

#[tokio::test]
async fn authorize_by_cn_trusts_the_subject_over_the_uri_san() {
    let ca = TestCa::new("Consul CA 1");
    let ixns = web_allow_api_deny();
    let s = Sabotage::AuthorizeByCn;
    let api_as_web = leaf_with_cn(&ca, "api", "web");
    let got = compare(s, &ca, &ixns, DefaultPolicy::DENY, Some(&api_as_web)).await;
    assert_eq!(got, (false, true), "URI SAN api, CN web");
    let web_as_api = leaf_with_cn(&ca, "web", "api");
    let got = compare(s, &ca, &ixns, DefaultPolicy::DENY, Some(&web_as_api)).await;
    assert_eq!(got, (true, false), "URI SAN web, CN api");
    let plain_api = ca.service_leaf("api");
    let got = compare(s, &ca, &ixns, DefaultPolicy::DENY, Some(&plain_api)).await;
    assert_eq!(got, (false, false), "no CN: the URI SAN still decides");
}

#[tokio::test]
async fn hardcoded_allow_ignores_default_deny() {
    let ca = TestCa::new("Consul CA 1");
    let web = ca.service_leaf("web");
    let s = Sabotage::HardcodedAllow;
    assert_eq!(
        compare(s, &ca, &[], DefaultPolicy::DENY, Some(&web)).await,
        (false, true)
    );
    let deny = [Intention::l4("web", "db", false)];
    assert_eq!(
        compare(s, &ca, &deny, DefaultPolicy::DENY, Some(&web)).await,
        (false, false),
        "a matching deny still denies"
    );
}

#[tokio::test]
async fn accept_any_trusted_cert_takes_non_service_ids_as_unknown() {
    let ca = TestCa::new("Consul CA 1");
    let s = Sabotage::AcceptAnyTrustedCert;
    let any = [Intention::l4("*", "db", true)];
    let agent_id = format!("spiffe://{TD}/agent/client/dc/dc1/id/n1");
    for (what, leaf) in [
        ("no URI SAN", ca.leaf_with(None, -1, 24)),
        ("agent ID", ca.leaf_with(Some(&agent_id), -1, 24)),
        (
            "non-SPIFFE URI",
            ca.leaf_with(Some("https://web.example"), -1, 24),
        ),
    ] {
        let got = compare(s, &ca, &any, DefaultPolicy::DENY, Some(&leaf)).await;
        assert_eq!(got, (false, true), "{what}");
    }
    let only_web = [Intention::l4("web", "db", true)];
    let leaf = ca.leaf_with(None, -1, 24);
    let got = compare(s, &ca, &only_web, DefaultPolicy::DENY, Some(&leaf)).await;
    assert_eq!(got, (false, false), "`unknown` is not web");
    let other = TestCa::new("Other cluster CA");
    let foreign = other.service_leaf("web");
    let got = compare(s, &ca, &any, DefaultPolicy::ALLOW, Some(&foreign)).await;
    assert_eq!(got, (false, false), "the chain is still checked");
    let got = compare(s, &ca, &any, DefaultPolicy::ALLOW, None).await;
    assert_eq!(got, (false, false), "a certificate is still required");
}

#[tokio::test]
async fn skip_expiry_check_accepts_expired_and_future_leaves() {
    let ca = TestCa::new("Consul CA 1");
    let s = Sabotage::SkipExpiryCheck;
    let web = svc_uri(TD, "web");
    for (what, leaf) in [
        ("expired", ca.leaf_with(Some(&web), -48, -24)),
        ("not yet valid", ca.leaf_with(Some(&web), 24, 48)),
    ] {
        let got = compare(s, &ca, &[], DefaultPolicy::ALLOW, Some(&leaf)).await;
        assert_eq!(got, (false, true), "{what}");
    }
    let other = TestCa::new("Other cluster CA");
    let foreign = other.leaf_with(Some(&web), -48, -24);
    let got = compare(s, &ca, &[], DefaultPolicy::ALLOW, Some(&foreign)).await;
    assert_eq!(got, (false, false), "an untrusted chain is still refused");
}

#[tokio::test]
async fn serve_self_signed_fails_the_clients_root_check() {
    let ca = TestCa::new("Consul CA 1");
    let web = ca.service_leaf("web");
    let got = compare(
        Sabotage::ServeSelfSigned,
        &ca,
        &[],
        DefaultPolicy::ALLOW,
        Some(&web),
    )
    .await;
    assert_eq!(got, (true, false));
}

/// Reads until EOF or error, within `limit`.
pub(super) async fn closed_within<S: AsyncReadExt + Unpin>(s: &mut S, limit: Duration) -> bool {
    let mut buf = [0u8; 64];
    let read_to_end = async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(limit, read_to_end).await.is_ok()
}

#[tokio::test]
async fn never_recheck_open_keeps_revoked_connections_past_their_lifetime() {
    let ca = TestCa::new("Consul CA 1");
    let knobs = Knobs {
        reauthorize_interval: Duration::from_millis(100),
        max_connection_lifetime: Some(Duration::from_millis(1500)),
        ..Knobs::default()
    };
    let allow = vec![Intention::l4("web", "db", true)];
    let cfg = client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false);
    for set in [Sabotages::NONE, Sabotage::NeverRecheckOpen.into()] {
        let app = echo_app().await;
        let snapshot = snap(
            &ca,
            app,
            allow.clone(),
            DefaultPolicy::DENY,
            knobs.clone(),
            set,
        );
        let (tx, dp) = start(snapshot).await;
        let mut open = connect(dp.inbound_addr(), cfg.clone()).await.unwrap();
        assert_eq!(echo_once(&mut open, b"1").await.unwrap(), b"1");
        tx.send_modify(|s| {
            if let Some(cur) = s {
                let mut next = (**cur).clone();
                next.intentions = Arc::new(IntentionSet::new("db", vec![]).with_sabotage(set));
                *s = Some(Arc::new(next));
            }
        });
        let refused = probe(dp.inbound_addr(), cfg.clone(), b"n").await;
        assert!(refused.is_err(), "{set}: new connections follow the change");
        if set.is_empty() {
            assert!(closed_within(&mut open, Duration::from_secs(1)).await);
            continue;
        }
        // Past several re-check intervals and the lifetime, it still carries bytes.
        for round in 0..4u8 {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let got = echo_once(&mut open, &[round]).await;
            assert_eq!(got, Ok(vec![round]), "round {round}");
        }
    }
}

/// An HTTP app answering 200 `app` to anything.
pub(super) async fn http_app() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = l.accept().await {
            let svc = service_fn(|_req: Request<hyper::body::Incoming>| async {
                let body = Full::new(Bytes::from_static(b"app"));
                Ok::<_, std::convert::Infallible>(http::Response::new(body))
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tcp), svc),
            );
        }
    });
    addr
}

/// The statuses of GETs to `paths`, in order, on one keep-alive connection as `web`.
async fn statuses(set: Sabotages, ca: &TestCa, paths: &[&str]) -> Vec<u16> {
    let perms = vec![Permission {
        action: "allow".into(),
        http: Some(HttpMatch {
            path_prefix: Some("/public".into()),
            ..HttpMatch::default()
        }),
        jwt: None,
    }];
    let ixns = vec![Intention::l7("web", "db", perms)];
    let knobs = Knobs {
        protocol: Protocol::Http,
        ..Knobs::default()
    };
    let app = http_app().await;
    let (_tx, dp) = start(snap(ca, app, ixns, DefaultPolicy::DENY, knobs, set)).await;
    let cfg = client_config(Some(&ca.service_leaf("web")), &ca.roots(), "db", false);
    let tls = connect(dp.inbound_addr(), cfg).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut out = Vec::new();
    for path in paths {
        let req = Request::get(*path)
            .header("host", "db")
            .body(Empty::<Bytes>::new())
            .unwrap();
        let resp = sender.send_request(req).await.unwrap();
        out.push(resp.status().as_u16());
        resp.into_body().collect().await.unwrap();
    }
    out
}

#[tokio::test]
async fn authorize_per_connection_reuses_the_first_decision() {
    let ca = TestCa::new("Consul CA 1");
    let s: Sabotages = Sabotage::AuthorizePerConnection.into();
    let first_allowed = ["/public/a", "/admin", "/public/b"];
    assert_eq!(
        statuses(Sabotages::NONE, &ca, &first_allowed).await,
        [200, 403, 200]
    );
    assert_eq!(statuses(s, &ca, &first_allowed).await, [200, 200, 200]);
    let first_denied = ["/admin", "/public/a"];
    assert_eq!(
        statuses(Sabotages::NONE, &ca, &first_denied).await,
        [403, 200]
    );
    assert_eq!(statuses(s, &ca, &first_denied).await, [403, 403]);
}
