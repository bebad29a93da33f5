//! Inbound mTLS against the sim's CA: intentions allow/deny, default policy, every forged
//! identity refused, authorization by URI SAN (not CN), the trust-domain knob, and the identity
//! the proxy serves.

use std::time::Duration;

use agent_sim::ca::Forgery;
use serde_json::json;

use super::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn intentions_allow_and_deny() {
    let w = World::basic().await;
    w.allow("web");
    w.deny("api");
    let proxy = w.proxy().await;
    assert_eq!(proxy.inbound_addr().port(), w.public_port);
    let (web, api) = (w.probe("web"), w.probe("api"));
    web.echo(w.public(), b"hello db").await.unwrap();
    let before = w.app_connections();
    let refused = api.echo(w.public(), b"hello db").await;
    assert!(refused.is_err(), "api must be refused: {refused:?}");
    // No intention for `other`: the ACL default (deny) applies.
    assert!(w.probe("other").echo(w.public(), b"x").await.is_err());
    assert_eq!(
        w.app_connections(),
        before,
        "refused probes reached the app"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exact_source_beats_the_wildcard() {
    let w = World::basic().await;
    w.c()
        .put_intention("*", "db", &json!({"Action": "deny"}))
        .unwrap();
    w.allow("web");
    let _proxy = w.proxy().await;
    let (web, api) = (w.probe("web"), w.probe("api"));
    web.echo(w.public(), b"precedence 9").await.unwrap();
    assert!(
        api.echo(w.public(), b"x").await.is_err(),
        "* deny (8) ignored"
    );

    // Flip both (web first, so once api is allowed the proxy has seen both changes).
    w.deny("web");
    w.c()
        .put_intention("*", "db", &json!({"Action": "allow"}))
        .unwrap();
    eventually("wildcard allow applies to api", PATIENCE, || {
        api.works(w.public())
    })
    .await;
    stays("web stays denied by its exact intention", 5, || async {
        !web.works(w.public()).await
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_intention_policy_from_the_agent() {
    // ACL default deny, but default_intention_policy = allow wins (reference section 13).
    let w = World::new(
        sim_builder().default_intention_policy(agent_sim::config::IntentionDefault::Allow),
        json!({}),
    )
    .await;
    w.deny("api");
    let _proxy = w.proxy().await;
    w.probe("other").echo(w.public(), b"x").await.unwrap();
    assert!(w.probe("api").echo(w.public(), b"x").await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_policy_from_the_acl_header_without_agent_read() {
    // ACL default allow; the token may not read agent/self (explicit deny), so the proxy
    // falls back to `X-Consul-Default-ACL-Policy` (allow) rather than guessing.
    let w = World::new(
        sim_builder().acls(ROOT_TOKEN, agent_sim::acl::DefaultPolicy::Allow),
        json!({}),
    )
    .await;
    let rules = format!("{SERVICE_IDENTITY_RULES}\nagent_prefix \"\" {{ policy = \"deny\" }}\n");
    let (client, secret) = w.client_with(&rules);
    w.deny("api");
    let _proxy = start(proxy_under_test::Proxy::new(client, "db-sidecar-proxy")).await;
    w.probe("other").echo(w.public(), b"x").await.unwrap();
    assert!(w.probe("api").echo(w.public(), b"x").await.is_err());
    let refused = w.c().request_log().into_iter().any(|e| {
        e.path == "/v1/agent/self" && e.status == Some(403) && e.token.as_deref() == Some(&secret)
    });
    assert!(
        refused,
        "agent/self was not refused: the test proves nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_identities_are_refused() {
    let w = World::basic().await;
    w.allow("web");
    w.deny("api");
    let _proxy = w.proxy().await;
    let c = w.c();
    let roots = c.root_pems();
    let web = || "web".to_owned();
    let forged = [
        ("untrusted CA", Forgery::UntrustedCa { service: web() }),
        ("expired", Forgery::Expired { service: web() }),
        ("no SPIFFE URI", Forgery::NoSpiffe { common_name: web() }),
        ("agent ID", Forgery::AgentId { node: web() }),
        ("self-signed", Forgery::SelfSigned { service: web() }),
        (
            "CN web, URI api",
            Forgery::CommonNameMismatch {
                common_name: web(),
                service: "api".into(),
            },
        ),
    ];
    w.probe("web").echo(w.public(), b"ok").await.unwrap();
    let before = w.app_connections();
    for (what, f) in &forged {
        let probe = Probe::new(&c.forge(f).unwrap(), &roots);
        let got = probe.echo(w.public(), b"let me in").await;
        assert!(got.is_err(), "{what}: accepted");
    }
    let got = Probe::anonymous(&roots).echo(w.public(), b"x").await;
    assert!(got.is_err(), "no client certificate: accepted");
    assert_eq!(
        w.app_connections(),
        before,
        "a forged probe reached the app"
    );

    // Authorization is by URI SAN: CN api with URI web is web.
    let swapped = Forgery::CommonNameMismatch {
        common_name: "api".into(),
        service: web(),
    };
    Probe::new(&c.forge(&swapped).unwrap(), &roots)
        .echo(w.public(), b"by URI")
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trust_domain_is_not_checked_unless_asked() {
    let w = World::basic().await;
    w.allow("web");
    let proxy = w.proxy().await;
    let c = w.c();
    let foreign = c
        .forge(&Forgery::ForeignTrustDomain {
            service: "web".into(),
        })
        .unwrap();
    let probe = Probe::new(&foreign, &c.root_pems());
    probe.echo(w.public(), b"like Consul").await.unwrap();

    // Turning the knob on through the registration applies without a restart.
    w.register_db(
        &json!({"Config": {"reauthorize_interval_ms": 200, "verify_trust_domain": true}}),
    );
    let mut snaps = proxy.snapshots();
    tokio::time::timeout(
        PATIENCE,
        snaps.wait_for(|s| s.as_ref().is_some_and(|s| s.knobs.verify_trust_domain)),
    )
    .await
    .expect("registration change seen")
    .unwrap();
    assert!(probe.echo(w.public(), b"x").await.is_err());
    w.probe("web")
        .echo(w.public(), b"home domain")
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_a_db_leaf_chaining_to_the_active_root() {
    let w = World::basic().await;
    w.allow("web");
    let _proxy = w.proxy().await;
    let chain = w.probe("web").served_chain(w.public()).await;
    let td = w.c().trust_domain();
    assert_eq!(
        uris(&chain[0]),
        vec![format!("spiffe://{td}/ns/default/dc/dc1/svc/db")]
    );
    assert!(chains_to(&chain, &w.c().root_pems()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_probes_with_a_short_leaf_ttl_differ_only_in_their_forgery() {
    // Leaf TTL of seconds (as in the leaf-renewal scenario): a trusted forgery is still
    // current, so the proxy judges it by identity alone.
    let w = World::new(sim_builder().leaf_ttl(Duration::from_secs(10)), json!({})).await;
    w.allow("web");
    w.deny("api");
    let _proxy = w.proxy().await;
    let (c, roots) = (w.c(), w.c().root_pems());
    let foreign = Forgery::ForeignTrustDomain {
        service: "web".into(),
    };
    let by_uri = Forgery::CommonNameMismatch {
        common_name: "api".into(),
        service: "web".into(),
    };
    for f in [foreign, by_uri] {
        let got = Probe::new(&c.forge(&f).unwrap(), &roots)
            .echo(w.public(), b"x")
            .await;
        assert!(got.is_ok(), "{f:?} refused: {got:?}");
    }
}
