//! The relay between our stream and a plain socket, against tokio-rustls peers in both roles:
//! random transfers both ways with random write and read chunking and small socket buffers
//! (partial records everywhere), each direction half-closed on its own.

use std::future::Future;

use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::tls::session::relay;

/// Writes `data` in chunks of the given sizes (cycled), then shuts down.
async fn write_chunked<W: AsyncWrite + Unpin>(w: &mut W, data: &[u8], sizes: &[usize]) {
    let mut at = 0;
    for size in sizes.iter().cycle() {
        if at >= data.len() {
            break;
        }
        let end = (at + size).min(data.len());
        w.write_all(&data[at..end]).await.unwrap();
        at = end;
    }
    w.shutdown().await.unwrap();
}

/// Reads to EOF with buffers of the given sizes (cycled).
async fn read_chunked<R: AsyncRead + Unpin>(r: &mut R, sizes: &[usize]) -> Vec<u8> {
    let mut got = Vec::new();
    for size in sizes.iter().cycle() {
        let mut buf = vec![0u8; *size];
        let n = r.read(&mut buf).await.unwrap();
        if n == 0 {
            return got;
        }
        got.extend_from_slice(&buf[..n]);
    }
    got
}

struct Case {
    up: Vec<u8>,
    down: Vec<u8>,
    writes: Vec<usize>,
    reads: Vec<usize>,
    wire: usize,
    suite: usize,
    serving: bool,
    peer_first: bool,
}

async fn run(case: Case) {
    let suites = suites();
    let pki = pki(Some(suites[case.suite % suites.len()]), &[]);
    let (wire_ours, wire_theirs) = tokio::io::duplex(case.wire);
    let (mut app_relay, app) = tokio::io::duplex(case.wire);
    let (mut app_r, mut app_w) = tokio::io::split(app);
    // The peer: a tokio-rustls stream split in halves; `up` flows peer → app, `down` back.
    let (ours, peer) = if case.serving {
        let connector = tokio_rustls::TlsConnector::from(pki.client.clone());
        let (o, p) = tokio::join!(
            crate::tls::session::accept(pki.server.clone(), wire_ours),
            connector.connect(name(), wire_theirs)
        );
        let p: Box<dyn Peer> = Box::new(p.unwrap());
        (o.unwrap(), p)
    } else {
        let acceptor = tokio_rustls::TlsAcceptor::from(pki.server.clone());
        let (o, p) = tokio::join!(
            crate::tls::session::connect(pki.client.clone(), name(), wire_ours),
            acceptor.accept(wire_theirs)
        );
        let p: Box<dyn Peer> = Box::new(p.unwrap());
        (o.unwrap(), p)
    };
    let (mut peer_r, mut peer_w) = tokio::io::split(peer);
    let mut ours = ours;
    let relayed = async {
        relay(&mut ours, &mut app_relay).await.unwrap();
    };
    let peer_side = async {
        if case.peer_first {
            write_chunked(&mut peer_w, &case.up, &case.writes).await;
        }
        let got = read_chunked(&mut peer_r, &case.reads).await;
        if !case.peer_first {
            write_chunked(&mut peer_w, &case.up, &case.writes).await;
        }
        got
    };
    let app_side = async {
        let (got, ()) = tokio::join!(
            read_chunked(&mut app_r, &case.reads),
            write_chunked(&mut app_w, &case.down, &case.writes)
        );
        got
    };
    let all = async { tokio::join!(relayed, peer_side, app_side) };
    let ((), peer_got, app_got) = tokio::time::timeout(Duration::from_secs(30), all)
        .await
        .expect("relay stalled");
    assert!(app_got == case.up, "peer → app lost or changed bytes");
    assert!(peer_got == case.down, "app → peer lost or changed bytes");
}

/// Either tokio-rustls stream.
trait Peer: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Peer for T {}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]
    #[test]
    fn relay_moves_random_transfers_both_ways(
        up_len in 0usize..400_000,
        down_len in 0usize..400_000,
        writes in proptest::collection::vec(1usize..70_000, 1..6),
        reads in proptest::collection::vec(1usize..70_000, 1..6),
        wire in 1024usize..80_000,
        suite in 0usize..6,
        serving: bool,
        peer_first: bool,
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(run(Case {
            up: random(up_len),
            down: random(down_len),
            writes,
            reads,
            wire,
            suite,
            serving,
            peer_first,
        }));
    }
}

#[tokio::test]
async fn the_stream_itself_carries_random_transfers_with_random_chunking() {
    let pki = pki(None, &[]);
    let (mut ours, theirs) = ours_serving(&pki).await;
    let up = random(500_000);
    let down = random(333_333);
    let (mut tr, mut tw) = tokio::io::split(theirs);
    let ours_side = async {
        let got = read_chunked(&mut ours, &[1, 17_000, 5, 65_536, 300]).await;
        write_chunked(&mut ours, &down, &[16_385, 3, 100_000, 1]).await;
        got
    };
    let theirs_side = async {
        write_chunked(&mut tw, &up, &[7, 40_000, 16_384]).await;
        read_chunked(&mut tr, &[9_999, 70_000]).await
    };
    let (a, b) = tokio::join!(ours_side, theirs_side);
    assert!(a == up);
    assert!(b == down);
}

/// A connected loopback TCP pair.
async fn tcp_pair() -> (tokio::net::TcpStream, tokio::net::TcpStream) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let (a, b) = tokio::join!(tokio::net::TcpStream::connect(addr), l.accept());
    (a.unwrap(), b.unwrap().0)
}

#[tokio::test]
async fn over_tcp_the_relay_scatters_reads_into_slots_and_updates_keys_at_the_limit() {
    for suite in [suites()[0], suites()[3]] {
        let pki = pki(Some(suite), &[]);
        let (wire_ours, wire_theirs) = tcp_pair().await;
        let (mut app_relay, app) = tcp_pair().await;
        let acceptor = tokio_rustls::TlsAcceptor::from(pki.server.clone());
        let (ours, theirs) = tokio::join!(
            crate::tls::session::connect(pki.client.clone(), name(), wire_ours),
            acceptor.accept(wire_theirs)
        );
        let (mut ours, theirs) = (ours.unwrap(), theirs.unwrap());
        if suite.version() == &rustls::version::TLS13 {
            // Several KeyUpdates inside one transfer, between the scattered slots.
            ours.tx.sealer_mut().set_limit(7);
        }
        let up = random(3_000_000);
        let down = random(2_000_001);
        let relayed = async { relay(&mut ours, &mut app_relay).await.unwrap() };
        let (got_app, got_peer) =
            async { tokio::join!(exchange(app, &up), exchange(theirs, &down)) }
                .await_both(relayed)
                .await;
        assert!(got_app.unwrap() == down, "{suite:?}");
        assert!(got_peer.unwrap() == up, "{suite:?}");
    }
}

/// Runs a pair future alongside the relay.
trait AwaitBoth: Future + Sized {
    async fn await_both(self, relay: impl Future<Output = ()>) -> Self::Output {
        let (out, ()) = tokio::join!(self, relay);
        out
    }
}
impl<F: Future> AwaitBoth for F {}

/// A scattered read that fills less than its slots clears the socket's readiness (the next
/// read waits for epoll's next edge instead of making a `readv` bound to answer `EAGAIN`); one
/// that fills them keeps it (more may be queued); bytes arriving later are read either way.
#[tokio::test]
async fn a_short_scattered_read_waits_for_the_next_edge_and_a_full_one_does_not() {
    use crate::tls::session::SlotRead;
    use std::io::IoSliceMut;
    use std::task::{Context, Waker};

    let (mut ours, mut theirs) = tcp_pair().await;
    let mut buf = [0u8; 64];
    for (sent, cleared) in [
        (&b"hello"[..], true),
        (&[7u8; 64][..], false),
        (b"world", true),
    ] {
        theirs.write_all(sent).await.unwrap();
        let n =
            std::future::poll_fn(|cx| ours.poll_read_slots(cx, &mut [IoSliceMut::new(&mut buf)]))
                .await
                .unwrap();
        assert_eq!(&buf[..n], sent);
        let ready = ours.poll_read_ready(&mut Context::from_waker(Waker::noop()));
        assert_eq!(
            ready.is_pending(),
            cleared,
            "after reading {} bytes",
            sent.len()
        );
    }
}
