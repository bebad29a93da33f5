//! Faults on the wire and key changes: a tampered record and an oversized one are errors with
//! no plaintext delivered, and the peer is told with the matching fatal alert (by the stream and
//! by the relay); a TCP close without close_notify is an error after the data before
//! it; application data in the client's Finished flight is delivered; a peer's KeyUpdate (with
//! and without update_requested) is followed; our own KeyUpdate before the confidentiality
//! limit is followed by buffered rustls; at the limit TLS 1.2 ends the connection.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc;

use super::*;
use crate::tls::session::{accept, connect};

/// A wire between our client and their server that can flip a bit of the next server chunk or
/// inject raw bytes towards us.
struct Mitm {
    ours: DuplexStream,
    theirs: DuplexStream,
    tamper: Arc<AtomicBool>,
    inject: mpsc::UnboundedSender<Vec<u8>>,
}

fn mitm() -> Mitm {
    let (ours, fwd_ours) = tokio::io::duplex(256 * 1024);
    let (fwd_theirs, theirs) = tokio::io::duplex(256 * 1024);
    let tamper = Arc::new(AtomicBool::new(false));
    let (inject, mut injected) = mpsc::unbounded_channel::<Vec<u8>>();
    let (mut to_ours_r, mut to_ours_w) = tokio::io::split(fwd_ours);
    let (mut from_theirs_r, mut to_theirs_w) = tokio::io::split(fwd_theirs);
    let flag = tamper.clone();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            tokio::select! {
                n = from_theirs_r.read(&mut buf) => {
                    let Ok(n @ 1..) = n else { break };
                    if flag.swap(false, Ordering::SeqCst) {
                        buf[n - 1] ^= 1;
                    }
                    if to_ours_w.write_all(&buf[..n]).await.is_err() { break }
                }
                Some(raw) = injected.recv() => {
                    if to_ours_w.write_all(&raw).await.is_err() { break }
                }
            }
        }
    });
    tokio::spawn(async move {
        let _ = tokio::io::copy(&mut to_ours_r, &mut to_theirs_w).await;
    });
    Mitm {
        ours,
        theirs,
        tamper,
        inject,
    }
}

async fn over_mitm(
    pki: &Pki,
) -> (
    TlsStream<DuplexStream>,
    tokio_rustls::server::TlsStream<DuplexStream>,
    Arc<AtomicBool>,
    mpsc::UnboundedSender<Vec<u8>>,
) {
    let m = mitm();
    let acceptor = tokio_rustls::TlsAcceptor::from(pki.server.clone());
    let (ours, theirs) = tokio::join!(
        connect(pki.client.clone(), name(), m.ours),
        acceptor.accept(m.theirs)
    );
    (ours.unwrap(), theirs.unwrap(), m.tamper, m.inject)
}

/// The error the peer's next read ends with (a bounded wait: a peer never told would hang).
async fn next_error<S: AsyncRead + Unpin>(peer: &mut S) -> std::io::Error {
    let mut buf = [0u8; 16];
    let read = peer.read(&mut buf);
    match tokio::time::timeout(Duration::from_secs(10), read).await {
        Ok(r) => r.expect_err("the peer read data, not an error"),
        Err(_) => panic!("the peer was told nothing in 10 s"),
    }
}

/// The peer's next read ends with our fatal alert `alert` (rustls's name for it).
async fn assert_told<S: AsyncRead + Unpin>(peer: &mut S, alert: &str) {
    let err = next_error(peer).await;
    let want = format!("received fatal alert: {alert}");
    assert!(
        err.to_string().contains(&want),
        "the peer was not told {alert}: {err}"
    );
}

#[tokio::test]
async fn a_tampered_record_is_an_error_and_delivers_nothing() {
    for suite in suites() {
        let pki = pki(Some(suite), &[]);
        let (mut ours, mut theirs, tamper, _) = over_mitm(&pki).await;
        tamper.store(true, Ordering::SeqCst);
        theirs.write_all(b"secret").await.unwrap();
        theirs.flush().await.unwrap();
        let mut got = [0u8; 16];
        let err = ours
            .read(&mut got)
            .await
            .expect_err("tampered record accepted");
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData, "{suite:?}");
        assert!(err.to_string().contains("bad record MAC"), "{err}");
        assert!(ours.read(&mut got).await.is_err(), "an error is final");
        assert_told(&mut theirs, "BadRecordMac").await;
    }
}

#[tokio::test]
async fn the_relay_tells_the_peer_too() {
    let pki = pki(None, &[]);
    let (mut ours, mut theirs, tamper, _) = over_mitm(&pki).await;
    let (mut app, mut app_peer) = tokio::io::duplex(64 * 1024);
    tamper.store(true, Ordering::SeqCst);
    theirs.write_all(b"secret").await.unwrap();
    theirs.flush().await.unwrap();
    let err = crate::tls::session::relay(&mut ours, &mut app)
        .await
        .expect_err("tampered record relayed");
    assert!(err.to_string().contains("bad_record_mac"), "{err}");
    assert_told(&mut theirs, "BadRecordMac").await;
    drop(app);
    let mut got = Vec::new();
    app_peer.read_to_end(&mut got).await.unwrap();
    assert!(got.is_empty(), "the application got {got:?}");
}

#[tokio::test]
async fn a_record_over_the_size_limit_is_an_error() {
    let pki = pki(None, &[]);
    let (mut ours, mut theirs, _, inject) = over_mitm(&pki).await;
    let mut raw = vec![23, 3, 3, 0x41, 0x01];
    raw.extend(std::iter::repeat_n(0u8, 64));
    inject.send(raw).unwrap();
    let err = ours.read(&mut [0u8; 16]).await.unwrap_err();
    assert!(err.to_string().contains("record overflow"), "{err}");
    assert_told(&mut theirs, "RecordOverflow").await;
}

#[tokio::test]
async fn truncation_without_close_notify_is_an_error_after_the_data() {
    let pki = pki(None, &[]);
    let (mut ours, mut theirs) = ours_dialing(&pki).await;
    theirs.write_all(b"partial").await.unwrap();
    theirs.flush().await.unwrap();
    drop(theirs);
    let mut got = [0u8; 7];
    ours.read_exact(&mut got).await.unwrap();
    assert_eq!(&got, b"partial");
    let err = ours.read(&mut [0u8; 8]).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
}

#[tokio::test]
async fn data_sent_with_the_client_finished_is_delivered() {
    for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
        let suite = suites()
            .into_iter()
            .find(|s| s.version() == version)
            .unwrap();
        let pki = pki(Some(suite), &[]);
        let (a, mut b) = tokio::io::duplex(256 * 1024);
        let server = tokio::spawn(accept(pki.server.clone(), a));
        let mut conn = rustls::ClientConnection::new(pki.client.clone(), name()).unwrap();
        conn.writer().write_all(b"sent with Finished").unwrap();
        loop {
            let mut out = Vec::new();
            while conn.wants_write() {
                conn.write_tls(&mut out).unwrap();
            }
            b.write_all(&out).await.unwrap();
            if !conn.is_handshaking() {
                break;
            }
            let mut buf = vec![0u8; 64 * 1024];
            let n = b.read(&mut buf).await.unwrap();
            assert!(n > 0);
            conn.read_tls(&mut &buf[..n]).unwrap();
            conn.process_new_packets().unwrap();
        }
        let mut ours = server.await.unwrap().unwrap();
        // TLS 1.3: the data came in the Finished flight and rustls opened it during the
        // handshake. (A TLS 1.2 client waits for the server's Finished before sending data.)
        if version == &rustls::version::TLS13 {
            assert!(ours.rx.has_plain(), "read with the handshake");
        }
        let mut got = [0u8; 18];
        ours.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"sent with Finished", "{version:?}");
        // And the session goes on: our reply reaches them.
        ours.write_all(b"ok").await.unwrap();
        ours.flush().await.unwrap();
        let mut buf = vec![0u8; 4096];
        let mut plain = Vec::new();
        while plain.len() < 2 {
            let n = b.read(&mut buf).await.unwrap();
            conn.read_tls(&mut &buf[..n]).unwrap();
            conn.process_new_packets().unwrap();
            let mut chunk = [0u8; 16];
            if let Ok(k) = conn.reader().read(&mut chunk) {
                plain.extend_from_slice(&chunk[..k]);
            }
        }
        assert_eq!(plain, b"ok");
    }
}

#[tokio::test]
async fn a_peer_key_update_requesting_ours_is_followed() {
    let pki = pki(Some(suites()[0]), &[]);
    let (mut ours, mut theirs) = ours_serving(&pki).await;
    for round in 0..3 {
        theirs.get_mut().1.refresh_traffic_keys().unwrap();
        theirs.write_all(b"after update").await.unwrap();
        theirs.flush().await.unwrap();
        let mut got = [0u8; 12];
        ours.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"after update", "round {round}");
        ours.write_all(b"reply").await.unwrap();
        ours.flush().await.unwrap();
        let mut got = [0u8; 5];
        theirs.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"reply", "round {round}");
    }
}

#[tokio::test]
async fn our_key_update_before_the_limit_is_followed_by_rustls_and_by_us() {
    let pki = pki(Some(suites()[0]), &[]);
    let msgs: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i; 100 + usize::from(i)]).collect();
    let all: Vec<u8> = msgs.concat();
    // Buffered rustls receives our updates (update_not_requested).
    let (mut ours, mut theirs) = ours_dialing(&pki).await;
    ours.tx.sealer_mut().set_limit(3);
    for m in &msgs {
        ours.write_all(m).await.unwrap();
        ours.flush().await.unwrap();
    }
    let mut got = vec![0u8; all.len()];
    theirs.read_exact(&mut got).await.unwrap();
    assert!(got == all);
    // Our server receives them from our client.
    let (a, b) = tokio::io::duplex(256 * 1024);
    let (server, client) = tokio::join!(
        accept(pki.server.clone(), a),
        connect(pki.client.clone(), name(), b)
    );
    let (mut server, mut client) = (server.unwrap(), client.unwrap());
    client.tx.sealer_mut().set_limit(2);
    for m in &msgs {
        client.write_all(m).await.unwrap();
    }
    client.shutdown().await.unwrap();
    let mut got = Vec::new();
    server.read_to_end(&mut got).await.unwrap();
    assert!(got == all);
}

#[tokio::test]
async fn tls12_at_the_confidentiality_limit_ends_the_connection() {
    let suite = suites()
        .into_iter()
        .find(|s| s.version() == &rustls::version::TLS12)
        .unwrap();
    let pki = pki(Some(suite), &[]);
    let (mut ours, _theirs) = ours_dialing(&pki).await;
    ours.tx.sealer_mut().set_limit(2);
    ours.write_all(b"one").await.unwrap();
    let err = ours.write_all(b"two").await.unwrap_err();
    assert!(err.to_string().contains("record limit"), "{err}");
}

#[tokio::test]
async fn an_unexpected_content_type_or_a_fatal_alert_ends_the_stream() {
    // What the server reads, and the alert the client then reads from it (none after the
    // client's own fatal alert).
    for (typ, payload, want, told) in [
        (
            20u8,
            &[1u8][..],
            "unexpected message",
            Some("UnexpectedMessage"),
        ),
        (
            21,
            &[2, 42][..],
            "received fatal alert: BadCertificate",
            None,
        ),
        (21, &[2][..], "decode error", Some("DecodeError")),
        (
            22,
            &[99, 0, 0, 0][..],
            "unexpected message",
            Some("UnexpectedMessage"),
        ),
    ] {
        for suite in [suites()[0], suites()[3]] {
            let pki = pki(Some(suite), &[]);
            let (a, b) = tokio::io::duplex(64 * 1024);
            let (server, client) = tokio::join!(
                accept(pki.server.clone(), a),
                connect(pki.client.clone(), name(), b)
            );
            let (mut server, mut client) = (server.unwrap(), client.unwrap());
            client.tx.queue_raw(typ, payload).unwrap();
            client.flush().await.unwrap();
            let err = server.read(&mut [0u8; 8]).await.unwrap_err();
            assert!(err.to_string().contains(want), "{typ} {suite:?}: {err}");
            match told {
                Some(alert) => assert_told(&mut client, alert).await,
                None => {
                    // Nothing answers a fatal alert: the client sees the stream end when the
                    // server goes, not an alert.
                    drop(server);
                    let got = next_error(&mut client).await;
                    assert_eq!(got.kind(), std::io::ErrorKind::UnexpectedEof, "{got}");
                }
            }
        }
    }
}
