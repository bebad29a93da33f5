//! The handshake: rustls's unbuffered state machine driven over an async socket with our own
//! input buffer, then turned into a kernel connection and our record keys. Whatever was read past
//! the handshake (records rustls already opened, a partial record) goes to the record layer.
//! The public listener's ALPN rule (an offer sharing nothing with ours completes with none
//! selected) reads the ClientHello with rustls's `Acceptor` on a copy of the bytes.

use std::io;
use std::ops::DerefMut;
use std::sync::Arc;

use rustls::client::{ClientConnectionData, UnbufferedClientConnection};
use rustls::server::{Acceptor, ServerConnectionData, UnbufferedServerConnection};
use rustls::unbuffered::UnbufferedConnectionCommon;
use rustls::unbuffered::{ConnectionState, EncodeError, InsufficientSizeError, UnbufferedStatus};
use rustls::{ClientConfig, ExtractedSecrets, ProtocolVersion, ServerConfig, SupportedCipherSuite};
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::record::{Opener, Sealer, Version};
use super::rx::Rx;
use super::stream::TlsStream;
use super::tx::Tx;
use super::{Kernel, SessionInfo};

/// Largest handshake input buffered (a ClientHello or certificate flight beyond is refused).
const MAX_HANDSHAKE_BUF: usize = 256 * 1024;

/// The two unbuffered connection types, alike.
trait Unbuffered: DerefMut<Target = UnbufferedConnectionCommon<Self::Data>> + Sized {
    type Data;
    fn process<'c, 'i>(&'c mut self, buf: &'i mut [u8]) -> UnbufferedStatus<'c, 'i, Self::Data>;
    fn into_kernel(self) -> Result<(ExtractedSecrets, Kernel), rustls::Error>;
}

impl Unbuffered for UnbufferedClientConnection {
    type Data = ClientConnectionData;
    fn process<'c, 'i>(&'c mut self, buf: &'i mut [u8]) -> UnbufferedStatus<'c, 'i, Self::Data> {
        self.process_tls_records(buf)
    }
    fn into_kernel(self) -> Result<(ExtractedSecrets, Kernel), rustls::Error> {
        let (s, k) = self.dangerous_into_kernel_connection()?;
        Ok((s, Kernel::Client(k)))
    }
}

impl Unbuffered for UnbufferedServerConnection {
    type Data = ServerConnectionData;
    fn process<'c, 'i>(&'c mut self, buf: &'i mut [u8]) -> UnbufferedStatus<'c, 'i, Self::Data> {
        self.process_tls_records(buf)
    }
    fn into_kernel(self) -> Result<(ExtractedSecrets, Kernel), rustls::Error> {
        let (s, k) = self.dangerous_into_kernel_connection()?;
        Ok((s, Kernel::Server(k)))
    }
}

/// Bytes read and not yet consumed by the handshake.
struct Input {
    buf: Vec<u8>,
    used: usize,
}

impl Input {
    fn new() -> Self {
        Self {
            buf: vec![0; 16 * 1024],
            used: 0,
        }
    }

    async fn read<IO: AsyncRead + Unpin>(&mut self, io: &mut IO) -> io::Result<usize> {
        if self.used == self.buf.len() {
            if self.buf.len() >= MAX_HANDSHAKE_BUF {
                return Err(invalid("handshake message too large"));
            }
            self.buf.resize(self.buf.len() * 2, 0);
        }
        let n = io.read(&mut self.buf[self.used..]).await?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "tls handshake eof",
            ));
        }
        self.used += n;
        Ok(n)
    }
}

fn invalid(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// Config copies with secret extraction on (set by [`crate::tls`]'s builders already).
fn extractable<T: Clone>(config: Arc<T>, on: impl Fn(&T) -> bool, set: impl Fn(&mut T)) -> Arc<T> {
    if on(&config) {
        return config;
    }
    let mut c = (*config).clone();
    set(&mut c);
    Arc::new(c)
}

/// Client handshake with `config` for `name` over `io`.
pub(crate) async fn connect<IO: AsyncRead + AsyncWrite + Unpin>(
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
    mut io: IO,
) -> io::Result<TlsStream<IO>> {
    let config = extractable(
        config,
        |c| c.enable_secret_extraction,
        |c| {
            c.enable_secret_extraction = true;
        },
    );
    let conn = UnbufferedClientConnection::new(config, name).map_err(invalid)?;
    finish(conn, Input::new(), &mut io)
        .await
        .map(|(rx, tx, kernel, info)| TlsStream {
            io,
            rx,
            tx,
            kernel,
            info,
            shrink: Default::default(),
        })
}

/// Server handshake with `config` over `io`.
pub(crate) async fn accept<IO: AsyncRead + AsyncWrite + Unpin>(
    config: Arc<ServerConfig>,
    io: IO,
) -> io::Result<TlsStream<IO>> {
    accept_with(config, Input::new(), io).await
}

async fn accept_with<IO: AsyncRead + AsyncWrite + Unpin>(
    config: Arc<ServerConfig>,
    input: Input,
    mut io: IO,
) -> io::Result<TlsStream<IO>> {
    let config = extractable(
        config,
        |c| c.enable_secret_extraction,
        |c| {
            c.enable_secret_extraction = true;
        },
    );
    let conn = UnbufferedServerConnection::new(config).map_err(invalid)?;
    finish(conn, input, &mut io)
        .await
        .map(|(rx, tx, kernel, info)| TlsStream {
            io,
            rx,
            tx,
            kernel,
            info,
            shrink: Default::default(),
        })
}

/// Server handshake as Envoy (BoringSSL) negotiates ALPN: when the caller's offer shares nothing
/// with `config`'s, with a copy of `config` that offers none.
pub(crate) async fn accept_alpn_lenient<IO: AsyncRead + AsyncWrite + Unpin>(
    config: Arc<ServerConfig>,
    mut io: IO,
) -> io::Result<TlsStream<IO>> {
    if config.alpn_protocols.is_empty() {
        return accept(config, io).await;
    }
    let mut input = Input::new();
    let mut acceptor = Acceptor::default();
    let accepted = loop {
        let n = input.read(&mut io).await?;
        let mut rd = &input.buf[input.used - n..input.used];
        while !rd.is_empty() {
            acceptor.read_tls(&mut rd)?;
        }
        match acceptor.accept() {
            Ok(Some(a)) => break a,
            Ok(None) => {}
            Err((e, mut alert)) => {
                let mut out = Vec::new();
                let _ = alert.write_all(&mut out);
                let _ = io.write_all(&out).await;
                return Err(invalid(e));
            }
        }
    };
    let overlap = accepted.client_hello().alpn().is_none_or(|mut offered| {
        offered.any(|p| config.alpn_protocols.iter().any(|ours| ours == p))
    });
    let config = if overlap {
        config
    } else {
        tracing::debug!("caller's ALPN offer shares nothing with ours; selecting none");
        let mut none = (*config).clone();
        none.alpn_protocols.clear();
        Arc::new(none)
    };
    accept_with(config, input, io).await
}

type Done = (Rx, Tx, Kernel, SessionInfo);

/// Drives `conn` to the end of its handshake, then builds the record layer.
async fn finish<C: Unbuffered, IO: AsyncRead + AsyncWrite + Unpin>(
    mut conn: C,
    mut input: Input,
    io: &mut IO,
) -> io::Result<Done> {
    let mut early = Vec::new();
    let peer_closed = drive(&mut conn, &mut input, io, &mut early).await?;
    let info = SessionInfo {
        peer_certificates: conn
            .peer_certificates()
            .map(|c| c.iter().map(|c| c.clone().into_owned()).collect()),
        alpn: conn.alpn_protocol().map(<[u8]>::to_vec),
        version: conn
            .protocol_version()
            .ok_or_else(|| invalid("no protocol version"))?,
        suite: conn
            .negotiated_cipher_suite()
            .ok_or_else(|| invalid("no cipher suite"))?,
    };
    let (secrets, kernel) = conn.into_kernel().map_err(invalid)?;
    let version = if info.version == ProtocolVersion::TLSv1_3 {
        Version::Tls13
    } else {
        Version::Tls12
    };
    let limit = confidentiality_limit(info.suite);
    let opener = Opener::new(version, secrets.rx.0, &secrets.rx.1).map_err(|e| e.to_io())?;
    let sealer = Sealer::new(version, secrets.tx.0, &secrets.tx.1, limit).map_err(|e| e.to_io())?;
    let rx = Rx::new(opener, &early, &input.buf[..input.used], peer_closed);
    Ok((rx, Tx::new(sealer), kernel, info))
}

fn confidentiality_limit(suite: SupportedCipherSuite) -> u64 {
    match suite {
        SupportedCipherSuite::Tls12(s) => s.common.confidentiality_limit,
        SupportedCipherSuite::Tls13(s) => s.common.confidentiality_limit,
    }
}

enum Next {
    Process,
    Send,
    Read,
    Traffic,
    PeerClosed,
    Fail(io::Error),
}

/// The handshake loop; `early` gets plaintext rustls opened on the way. `Ok(true)`: the peer's
/// close_notify came right after its handshake.
async fn drive<C: Unbuffered, IO: AsyncRead + AsyncWrite + Unpin>(
    conn: &mut C,
    input: &mut Input,
    io: &mut IO,
    early: &mut Vec<u8>,
) -> io::Result<bool> {
    let mut out = vec![0u8; 8 * 1024];
    let mut out_len = 0;
    let mut failed = None;
    loop {
        let status = conn.process(&mut input.buf[..input.used]);
        let discard = status.discard;
        let next = match status.state {
            Err(e) => Next::Fail(invalid(e)),
            Ok(ConnectionState::ReadTraffic(mut r)) => {
                let mut next = Next::Process;
                while let Some(rec) = r.next_record() {
                    match rec {
                        Ok(rec) => early.extend_from_slice(rec.payload),
                        Err(e) => {
                            next = Next::Fail(invalid(e));
                            break;
                        }
                    }
                }
                next
            }
            Ok(ConnectionState::EncodeTlsData(mut e)) => loop {
                match e.encode(&mut out[out_len..]) {
                    Ok(n) => {
                        out_len += n;
                        break Next::Process;
                    }
                    Err(EncodeError::InsufficientSize(InsufficientSizeError { required_size })) => {
                        out.resize(out_len + required_size, 0);
                    }
                    Err(e) => break Next::Fail(invalid(e.to_string())),
                }
            },
            Ok(ConnectionState::TransmitTlsData(t)) => {
                t.done();
                Next::Send
            }
            Ok(ConnectionState::BlockedHandshake) => Next::Read,
            Ok(ConnectionState::WriteTraffic(_)) => Next::Traffic,
            Ok(ConnectionState::PeerClosed | ConnectionState::Closed) => Next::PeerClosed,
            Ok(other) => Next::Fail(invalid(format!("unexpected handshake state {other:?}"))),
        };
        if discard > 0 {
            input.buf.copy_within(discard..input.used, 0);
            input.used -= discard;
        }
        if let Some(e) = failed.take() {
            // After an error, rustls may have queued an alert for the peer: send it, best effort.
            if out_len > 0 {
                let _ = io.write_all(&out[..out_len]).await;
                let _ = io.flush().await;
            }
            return Err(e);
        }
        match next {
            Next::Process => {}
            Next::Send => {
                io.write_all(&out[..out_len]).await?;
                io.flush().await?;
                out_len = 0;
            }
            Next::Read => {
                input.read(io).await?;
            }
            Next::Traffic if conn.is_handshaking() => {
                input.read(io).await?;
            }
            Next::Traffic | Next::PeerClosed if !conn.is_handshaking() => {
                if out_len > 0 {
                    io.write_all(&out[..out_len]).await?;
                    io.flush().await?;
                }
                return Ok(matches!(next, Next::PeerClosed));
            }
            Next::Traffic | Next::PeerClosed => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "peer closed during the TLS handshake",
                ));
            }
            Next::Fail(e) => {
                // One more pass encodes the alert rustls queued, if any.
                failed = Some(e);
            }
        }
    }
}
