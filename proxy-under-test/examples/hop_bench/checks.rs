//! What the benchmark checks besides load: that B's public listener never resumes a TLS session
//! (a client that would resume is refused a resumption: every handshake on the hop is full), the
//! counters Envoy keeps of resumed sessions on both ends of its hop, and the time from a
//! service-router write to the first request that follows the new route on an open keep-alive
//! connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_sim::Control;
use anyhow::{Context, bail};
use proxy_under_test::tls::{ExpectedServer, Leaf, TrustRoots};
use rustls::HandshakeKind;
use rustls::client::Resumption;
use rustls_pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::l7::{self, Proto};
use crate::launch::Deployed;
use crate::mesh::router;

/// Connects twice to `d`'s TCP B with a client that keeps sessions and offers them; returns the
/// second handshake's kind (`Full` unless B resumed) and the negotiated cipher suite.
pub(crate) async fn second_handshake(c: &Control, d: &Deployed) -> anyhow::Result<String> {
    let id = c.issue_identity(&d.mesh.client.service)?;
    let leaf = Leaf::from_pem(&id.cert_chain_pem, &id.private_key_pem)?;
    let roots = TrustRoots::from_pems(c.root_pems().iter().map(String::as_str), "")?;
    let b = &d.mesh.servers["tcp"];
    let expected = ExpectedServer {
        namespace: "default".into(),
        datacenter: "dc1".into(),
        service: b.service.clone(),
    };
    let mut cfg = (*proxy_under_test::tls::outbound(&leaf, &roots, expected)?).clone();
    cfg.resumption = Resumption::in_memory_sessions(64);
    let connector = TlsConnector::from(Arc::new(cfg));
    let mut kinds = Vec::new();
    for _ in 0..2 {
        let tcp = TcpStream::connect(b.public).await?;
        let name = ServerName::try_from("b.internal.consul")?;
        let mut s = connector.connect(name, tcp).await.context("TLS to B")?;
        // One echo, so the client reads any session ticket B sends after the handshake.
        s.write_all(b"E").await?;
        s.write_all(&[1u8; 64]).await?;
        let mut buf = [0u8; 64];
        s.read_exact(&mut buf).await?;
        let conn = s.get_ref().1;
        kinds.push((
            conn.handshake_kind(),
            conn.negotiated_cipher_suite()
                .map(|cs| format!("{:?}", cs.suite()))
                .unwrap_or_default(),
        ));
        let _ = s.shutdown().await;
    }
    let (kind, suite) = &kinds[1];
    let kind = match kind {
        Some(HandshakeKind::Resumed) => "RESUMED",
        Some(HandshakeKind::Full) => "full",
        Some(HandshakeKind::FullWithHelloRetryRequest) => "full (HRR)",
        None => "unknown",
    };
    Ok(format!("second handshake {kind}, {suite}"))
}

/// Envoy's `ssl.session_reused` counters summed over A and B, B's listener's `ssl.handshake` and
/// its TLS 1.2 handshakes (`ssl.versions.TLSv1.2`).
pub(crate) async fn envoy_resumptions(d: &Deployed) -> anyhow::Result<(u64, u64, u64)> {
    let mut reused = 0;
    let mut handshakes = 0;
    let mut tls12 = 0;
    for role in ["a", "tcp"] {
        let Some(admin) = d.admin.get(role) else {
            continue;
        };
        let text = admin_get(*admin, "/stats?filter=ssl").await?;
        for line in text.lines() {
            let Some((name, v)) = line.split_once(": ") else {
                continue;
            };
            let v: u64 = v.trim().parse().unwrap_or(0);
            // Handshakes as B's public listener counts them (A's cluster counts the same ones).
            let counted = role == "tcp" && name.starts_with("listener.");
            if name.ends_with(".ssl.session_reused") {
                reused += v;
            } else if counted && name.ends_with(".ssl.handshake") {
                handshakes += v;
            } else if counted && name.ends_with(".ssl.versions.TLSv1.2") {
                tls12 += v;
            }
        }
    }
    Ok((reused, handshakes, tls12))
}

async fn admin_get(addr: SocketAddr, path: &str) -> anyhow::Result<String> {
    let mut s = TcpStream::connect(addr).await?;
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await?;
    let mut out = String::new();
    s.read_to_string(&mut out).await?;
    Ok(out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or(out))
}

/// `n` router changes for `d`'s `api`: each flips `/probe` to the other subset and times, from
/// just before the config entry write, the first answer from the new subset on a keep-alive
/// HTTP/1.1 connection polled every millisecond (reconnecting if the proxy closed it).
pub(crate) async fn router_changes(
    c: &Control,
    d: &Deployed,
    n: usize,
) -> anyhow::Result<Vec<Duration>> {
    let addr = d.mesh.entry["api"];
    let key = &d.kind.key;
    let mut conn = l7::connect(addr, Proto::H1).await?;
    let mut current = l7::request(&conn, Proto::H1, "/probe").await?;
    let mut out = Vec::new();
    for _ in 0..n {
        let target = if current == "v1" { "v2" } else { "v1" };
        // Let the previous change settle (and any pacing of the proxy's watches refill).
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let t0 = Instant::now();
        c.upsert_config_entry(&router(key, target))?;
        loop {
            match l7::request(&conn, Proto::H1, "/probe").await {
                Ok(inst) if inst == target => break,
                Ok(_) => {}
                Err(_) => conn = l7::connect(addr, Proto::H1).await?,
            }
            if t0.elapsed() > Duration::from_secs(15) {
                bail!(
                    "{}: /probe still not on {target} 15 s after the router change",
                    d.kind.label
                );
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        out.push(t0.elapsed());
        current = target.to_owned();
    }
    Ok(out)
}
