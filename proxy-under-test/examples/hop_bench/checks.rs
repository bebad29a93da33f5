//! What the benchmark checks besides load: whether B's public listener resumes a TLS session for a
//! client that offers one (and the version, suite and group it negotiates), the TLS counters
//! Envoy keeps on both ends of its hop (handshakes, resumed sessions, versions, ciphers, curves),
//! and the time from a service-router write to the first request that follows the new route on an
//! open keep-alive connection.

use std::collections::BTreeMap;
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

/// Connects twice to `d`'s TCP B with a client that keeps sessions and offers them (the reference
/// proxy's own outbound config, so for the reference this is A's side of the hop); returns the
/// second handshake's kind (`full` unless B resumed), protocol version, cipher suite and key
/// exchange group.
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
    let mut seen = Vec::new();
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
        let dbg = |v: Option<String>| v.unwrap_or_else(|| "?".into());
        seen.push((
            conn.handshake_kind(),
            dbg(conn.protocol_version().map(|v| format!("{v:?}"))),
            dbg(conn
                .negotiated_cipher_suite()
                .map(|cs| format!("{:?}", cs.suite()))),
            dbg(conn
                .negotiated_key_exchange_group()
                .map(|g| format!("{:?}", g.name()))),
        ));
        let _ = s.shutdown().await;
    }
    let (kind, version, suite, group) = &seen[1];
    let kind = match kind {
        Some(HandshakeKind::Resumed) => "RESUMED",
        Some(HandshakeKind::Full) => "full",
        Some(HandshakeKind::FullWithHelloRetryRequest) => "full (HRR)",
        None => "unknown",
    };
    Ok(format!(
        "second handshake {kind}, {version}, {suite}, {group}"
    ))
}

/// TLS counters of one side of an Envoy hop (`ssl.*` stats summed over its contexts).
#[derive(Debug, Default)]
pub(crate) struct TlsCounts {
    pub(crate) handshakes: u64,
    pub(crate) reused: u64,
    /// `ssl.versions.*`, `ssl.ciphers.*`, `ssl.curves.*` by name, zeros left out.
    pub(crate) versions: BTreeMap<String, u64>,
    pub(crate) ciphers: BTreeMap<String, u64>,
    pub(crate) curves: BTreeMap<String, u64>,
}

impl std::fmt::Display for TlsCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |m: &BTreeMap<String, u64>| {
            let v: Vec<String> = m.iter().map(|(k, n)| format!("{k} {n}")).collect();
            if v.is_empty() {
                "none".into()
            } else {
                v.join(", ")
            }
        };
        write!(
            f,
            "{} handshakes, {} resumed; versions: {}; ciphers: {}; curves: {}",
            self.handshakes,
            self.reused,
            list(&self.versions),
            list(&self.ciphers),
            list(&self.curves)
        )
    }
}

/// Envoy's TLS counters of the hop over the run: A's upstream clusters (the client side of every
/// hop of the kind) and B(tcp)'s public listener (the server side of the L4 hop, the bench's
/// resumption probe included); `None` for an end that is not Envoy (a mixed mesh).
pub(crate) async fn envoy_tls(
    d: &Deployed,
) -> anyhow::Result<(Option<TlsCounts>, Option<TlsCounts>)> {
    let mut out = [None, None];
    for (i, role, scope) in [(0, "a", "cluster."), (1, "tcp", "listener.")] {
        let Some(admin) = d.admin.get(role) else {
            continue;
        };
        let text = admin_get(*admin, "/stats?filter=ssl").await?;
        let t = out[i].insert(TlsCounts::default());
        for line in text.lines() {
            let Some((name, v)) = line.split_once(": ") else {
                continue;
            };
            let v: u64 = v.trim().parse().unwrap_or(0);
            let Some((_, stat)) = name.split_once(".ssl.").filter(|_| name.starts_with(scope))
            else {
                continue;
            };
            let put = |m: &mut BTreeMap<String, u64>, k: &str| {
                if v > 0 {
                    *m.entry(k.to_owned()).or_default() += v;
                }
            };
            match stat.split_once('.') {
                None if stat == "handshake" => t.handshakes += v,
                None if stat == "session_reused" => t.reused += v,
                Some(("versions", k)) => put(&mut t.versions, k),
                Some(("ciphers", k)) => put(&mut t.ciphers, k),
                Some(("curves", k)) => put(&mut t.curves, k),
                _ => {}
            }
        }
    }
    let [a, b] = out;
    Ok((a, b))
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
