//! Bulk buffers given back: after transfers that grew them both ways, a quiet connection
//! returns its receive and send buffers to their starting sizes once a period has passed with
//! no byte moving, not while bytes trickle or before the period is up; and keeps working.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::tls::session::shrink::SHRINK_AFTER;

/// `data` written (and flushed) by `w` while `r` reads it into `got`, the writer polled first.
async fn transfer<W, R>(w: &mut W, r: &mut R, data: &[u8], got: &mut [u8])
where
    W: AsyncWrite + Unpin,
    R: AsyncRead + Unpin,
{
    let send = async {
        w.write_all(data).await?;
        w.flush().await
    };
    let (sent, read) = tokio::join!(send, r.read_exact(got));
    sent.unwrap();
    read.unwrap();
    assert_eq!(got, data);
}

#[tokio::test(start_paused = true)]
async fn a_quiet_connection_gives_its_bulk_buffers_back_and_keeps_them_until_then() {
    let pki = pki(None, &[]);
    let (mut ours, mut theirs) = ours_serving(&pki).await;
    let data = random(2 * 1024 * 1024);
    // Ours sends first: the peer is polled only after ours filled the pipe, so ours seals ahead
    // under back-pressure (its send buffer grows); then the peer sends, and ours reads in bulk.
    let mut got = vec![0u8; data.len()];
    transfer(&mut ours, &mut theirs, &data, &mut got).await;
    transfer(&mut theirs, &mut ours, &data, &mut got).await;
    assert!(ours.tx.is_big(), "back-pressure grew the send buffer");
    assert!(ours.rx.is_big(), "a bulk read grew the receive buffer");

    // A trickle over four periods: bytes keep moving, so the buffers stay.
    for _ in 0..8 {
        tokio::time::sleep(SHRINK_AFTER / 2).await;
        theirs.write_all(&data[..1024]).await.unwrap();
        theirs.flush().await.unwrap();
        ours.read_exact(&mut got[..1024]).await.unwrap();
    }
    assert!(
        ours.rx.is_big() && ours.tx.is_big(),
        "kept while bytes move"
    );

    let mut one = [0u8; 1];
    let quiet = tokio::time::timeout(SHRINK_AFTER / 2, ours.read(&mut one)).await;
    assert!(quiet.is_err(), "nothing to read");
    assert!(
        ours.rx.is_big() && ours.tx.is_big(),
        "kept within the period"
    );
    let quiet = tokio::time::timeout(SHRINK_AFTER * 3, ours.read(&mut one)).await;
    assert!(quiet.is_err(), "nothing to read");
    assert!(!ours.rx.is_big(), "receive buffer given back");
    assert!(!ours.tx.is_big(), "send buffer given back");

    theirs.write_all(b"still here").await.unwrap();
    theirs.flush().await.unwrap();
    let mut back = [0u8; 10];
    ours.read_exact(&mut back).await.unwrap();
    assert_eq!(&back, b"still here");
    ours.write_all(b"and here").await.unwrap();
    ours.flush().await.unwrap();
    let mut back = [0u8; 8];
    theirs.read_exact(&mut back).await.unwrap();
    assert_eq!(&back, b"and here");
}
