//! Our stream against buffered rustls (tokio-rustls) in both roles, each version and suite:
//! data both ways, close_notify as EOF each way, the settled session's accessors, ALPN
//! selected or none (the public listener's rule), a client the proxy's verifier refuses.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

#[tokio::test]
async fn every_suite_both_roles_moves_data_and_closes_cleanly() {
    for suite in suites() {
        let pki = pki(Some(suite), &[]);
        let up = random(300 * 1024 + 7);
        let down = random(200 * 1024 + 3);

        let (ours, theirs) = ours_serving(&pki).await;
        assert_eq!(ours.negotiated_cipher_suite().suite(), suite.suite());
        assert!(ours.peer_certificates().is_some_and(|c| !c.is_empty()));
        let (a, b) = tokio::join!(exchange(ours, &down), exchange(theirs, &up));
        assert!(a.unwrap() == up, "server side {suite:?}");
        assert!(b.unwrap() == down, "server side {suite:?}");

        let (ours, theirs) = ours_dialing(&pki).await;
        assert_eq!(ours.negotiated_cipher_suite().suite(), suite.suite());
        assert_eq!(
            ours.protocol_version(),
            suite.version().version,
            "{suite:?}"
        );
        let (a, b) = tokio::join!(exchange(ours, &down), exchange(theirs, &up));
        assert!(a.unwrap() == up, "client side {suite:?}");
        assert!(b.unwrap() == down, "client side {suite:?}");
    }
}

#[tokio::test]
async fn half_close_keeps_the_other_direction_open() {
    for pki in [pki(None, &[]), pki(Some(suites()[suites().len() - 1]), &[])] {
        let (mut ours, mut theirs) = ours_serving(&pki).await;
        // We close our side first, then keep reading what they send.
        ours.shutdown().await.unwrap();
        let mut b = Vec::new();
        theirs.read_to_end(&mut b).await.unwrap();
        assert!(b.is_empty());
        theirs.write_all(b"after our close").await.unwrap();
        theirs.shutdown().await.unwrap();
        let mut got = Vec::new();
        ours.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"after our close");
        // And the other way round: they close, we still write.
        let (mut ours, mut theirs) = ours_dialing(&pki).await;
        theirs.shutdown().await.unwrap();
        let mut got = Vec::new();
        ours.read_to_end(&mut got).await.unwrap();
        assert!(got.is_empty());
        ours.write_all(b"after their close").await.unwrap();
        ours.shutdown().await.unwrap();
        let mut b = Vec::new();
        theirs.read_to_end(&mut b).await.unwrap();
        assert_eq!(b, b"after their close");
    }
}

async fn alpn_outcome(offer: &[&[u8]]) -> Option<Vec<u8>> {
    let pki = pki(None, &[b"h2", b"http/1.1"]);
    let mut client = (*pki.client).clone();
    client.alpn_protocols = offer.iter().map(|p| p.to_vec()).collect();
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ours, theirs) = tokio::join!(
        crate::tls::session::accept_alpn_lenient(pki.server.clone(), a),
        tokio_rustls::TlsConnector::from(Arc::new(client)).connect(name(), b)
    );
    let (mut ours, mut theirs) = (ours.unwrap(), theirs.unwrap());
    assert_eq!(
        ours.alpn_protocol().map(<[u8]>::to_vec),
        theirs.get_ref().1.alpn_protocol().map(<[u8]>::to_vec)
    );
    theirs.write_all(b"ping").await.unwrap();
    theirs.flush().await.unwrap();
    let mut b = [0u8; 4];
    ours.read_exact(&mut b).await.unwrap();
    assert_eq!(&b, b"ping");
    ours.alpn_protocol().map(<[u8]>::to_vec)
}

#[tokio::test]
async fn alpn_selected_or_none_as_envoy_negotiates() {
    assert_eq!(alpn_outcome(&[b"h2"]).await.as_deref(), Some(&b"h2"[..]));
    assert_eq!(
        alpn_outcome(&[b"spdy", b"http/1.1"]).await.as_deref(),
        Some(&b"http/1.1"[..])
    );
    assert_eq!(alpn_outcome(&[b"something-else"]).await, None);
    assert_eq!(alpn_outcome(&[]).await, None);
}

#[tokio::test]
async fn a_client_of_another_ca_is_refused_by_the_proxy_verifier() {
    let pki = pki(None, &[]);
    let other = pki_other_client(&pki);
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ours, theirs) = tokio::join!(crate::tls::session::accept(pki.server.clone(), a), async {
        let mut s = tokio_rustls::TlsConnector::from(other)
            .connect(name(), b)
            .await?;
        // TLS 1.3: the refusal arrives after the client's handshake.
        let mut x = [0u8; 1];
        s.read_exact(&mut x).await.map(|_| ())
    });
    let err = ours.err().expect("handshake must fail").to_string();
    assert!(
        err.contains("certificate") || err.contains("Certificate"),
        "{err}"
    );
    let theirs = theirs.expect_err("client must see the refusal").to_string();
    assert!(theirs.contains("alert"), "{theirs}");
}

/// A client config like `pki`'s, presenting a leaf of an unrelated CA.
fn pki_other_client(pki: &Pki) -> Arc<ClientConfig> {
    let stranger = Ca::root("stranger", Key::P256);
    let leaf = stranger.leaf("web", Key::P256, &[]).leaf();
    let mut c = ClientConfig::builder_with_provider(provider(None))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(pki.verifier.clone())
        .with_client_cert_resolver(Arc::new(FixedCert(leaf.certified.clone())));
    c.resumption = rustls::client::Resumption::disabled();
    Arc::new(c)
}
