//! The agent client over TLS against agent-sim's HTTPS: the agent CA and a client certificate
//! work, a missing client certificate, a wrong server name and an impostor's certificate are
//! refused, and `skip_verify` believes the impostor.

use std::time::Duration;

use agent_sim::AgentSim;
use agent_sim::state::agent_tls::ServerCert;

use crate::agent::{AgentClient, AgentTls};

const NAME: &str = "server.dc1.consul";

#[tokio::test]
async fn https_agent_with_ca_client_cert_and_server_name() {
    let sim = AgentSim::builder()
        .agent_tls(true, NAME)
        .run_checks(false)
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let m = sim.control().agent_tls().unwrap().material().clone();
    let write = |name: &str, pem: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, pem).unwrap();
        p
    };
    let tls = AgentTls {
        ca_file: Some(write("ca.pem", &m.ca_pem)),
        client_cert: Some(write("client.pem", &m.client.cert_pem)),
        client_key: Some(write("client-key.pem", &m.client.key_pem)),
        server_name: Some(NAME.into()),
        skip_verify: false,
    };
    let url = sim.url();
    let ok = |tls: &AgentTls| {
        let c = AgentClient::with_tls(&url, None, tls).unwrap();
        async move {
            c.with_request_timeout(Duration::from_secs(5))
                .roots(0, Duration::ZERO)
                .await
        }
    };
    ok(&tls)
        .await
        .expect("the agent CA and a client certificate");
    // 127.0.0.1 is in the certificate too: no server name needed.
    ok(&AgentTls {
        server_name: None,
        ..tls.clone()
    })
    .await
    .expect("verified for the address");
    let err = ok(&AgentTls {
        server_name: Some("other.dc1.consul".into()),
        ..tls.clone()
    })
    .await
    .unwrap_err();
    assert!(
        matches!(err, crate::agent::AgentError::Transport(_)),
        "{err}"
    );
    ok(&AgentTls {
        client_cert: None,
        client_key: None,
        ..tls.clone()
    })
    .await
    .expect_err("verify_incoming wants a client certificate");

    sim.control()
        .agent_tls()
        .unwrap()
        .present(ServerCert::Untrusted);
    ok(&tls)
        .await
        .expect_err("an impostor's certificate is refused");
    ok(&AgentTls {
        skip_verify: true,
        ..tls.clone()
    })
    .await
    .expect("CONSUL_HTTP_SSL_VERIFY=false believes anyone");
}
