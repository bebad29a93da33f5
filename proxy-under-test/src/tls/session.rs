//! A user-space TLS record layer on rustls's kernel-connection API: rustls runs the handshake
//! (unbuffered state machine, [`handshake`]), then hands over the traffic secrets and we protect
//! records ourselves with ring ([`record`]), in place in our own buffers ([`rx`], [`tx`]). The
//! result is a tokio stream ([`TlsStream`]) and a relay that moves bytes between it and a plain
//! socket without the extra copies of buffered rustls ([`relay`]).

mod handshake;
mod record;
mod relay;
mod rx;
mod shrink;
mod stream;
mod tx;

#[cfg(test)]
mod tests;

use std::io;

use rustls::client::ClientConnectionData;
use rustls::kernel::KernelConnection;
use rustls::server::ServerConnectionData;
use rustls::{ConnectionTrafficSecrets, ProtocolVersion, SupportedCipherSuite};
use rustls_pki_types::CertificateDer;

#[cfg(test)]
pub(crate) use self::handshake::accept;
pub(crate) use self::handshake::{accept_alpn_lenient, connect};
pub(crate) use self::relay::{SlotRead, relay};
pub(crate) use self::stream::TlsStream;

/// Errors of the record layer after the handshake (machine names: [`SessionError::name`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionError {
    /// A record failed authentication.
    #[error("bad record MAC")]
    BadRecordMac,
    /// A record (or its plaintext) over the size limit.
    #[error("record overflow ({0} bytes)")]
    RecordOverflow(usize),
    /// A record or message of a type not allowed here.
    #[error("unexpected message (type {0})")]
    UnexpectedMessage(u8),
    /// The peer sent a fatal alert (its description).
    #[error("received fatal alert: {0:?}")]
    PeerAlert(rustls::AlertDescription),
    /// A malformed post-handshake message.
    #[error("decode error: {0}")]
    Decode(&'static str),
    /// The connection ended without close_notify.
    #[error("peer closed connection without sending TLS close_notify")]
    Truncated,
    /// The sequence number space or the cipher suite's confidentiality limit ran out (TLS 1.2).
    #[error("record limit reached")]
    Limit,
    /// Secrets of an AEAD we do not implement.
    #[error("unsupported cipher suite")]
    UnsupportedSuite,
    /// rustls refused (key update).
    #[error("rustls: {0}")]
    Rustls(#[from] rustls::Error),
}

impl SessionError {
    /// Stable machine name, for logs and tests.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::BadRecordMac => "bad_record_mac",
            Self::RecordOverflow(_) => "record_overflow",
            Self::UnexpectedMessage(_) => "unexpected_message",
            Self::PeerAlert(_) => "peer_alert",
            Self::Decode(_) => "decode_error",
            Self::Truncated => "truncated",
            Self::Limit => "record_limit",
            Self::UnsupportedSuite => "unsupported_suite",
            Self::Rustls(_) => "rustls",
        }
    }

    /// The fatal alert this error owes the peer (RFC 8446 section 6.2, RFC 5246 section 7.2.2),
    /// if any: none when the peer's own alert or its close ended the connection, or for limits
    /// and failures of our own.
    pub(crate) fn alert(&self) -> Option<rustls::AlertDescription> {
        use rustls::AlertDescription as A;
        match self {
            Self::BadRecordMac => Some(A::BadRecordMac),
            Self::RecordOverflow(_) => Some(A::RecordOverflow),
            Self::UnexpectedMessage(_) => Some(A::UnexpectedMessage),
            Self::Decode(_) => Some(A::DecodeError),
            Self::PeerAlert(_)
            | Self::Truncated
            | Self::Limit
            | Self::UnsupportedSuite
            | Self::Rustls(_) => None,
        }
    }

    /// As an I/O error, message and machine name (truncation is `UnexpectedEof`, as with rustls).
    pub(crate) fn to_io(&self) -> io::Error {
        let kind = match self {
            Self::Truncated => io::ErrorKind::UnexpectedEof,
            _ => io::ErrorKind::InvalidData,
        };
        io::Error::new(kind, format!("{self} ({})", self.name()))
    }
}

impl From<SessionError> for io::Error {
    fn from(e: SessionError) -> Self {
        e.to_io()
    }
}

/// What the handshake settled, kept for the connection's life.
#[derive(Debug, Clone)]
pub(crate) struct SessionInfo {
    pub(crate) peer_certificates: Option<Vec<CertificateDer<'static>>>,
    pub(crate) alpn: Option<Vec<u8>>,
    pub(crate) version: ProtocolVersion,
    pub(crate) suite: SupportedCipherSuite,
}

/// rustls's side after the handshake: new secrets on key updates.
pub(crate) enum Kernel {
    Client(KernelConnection<ClientConnectionData>),
    Server(KernelConnection<ServerConnectionData>),
}

impl Kernel {
    fn update_rx(&mut self) -> Result<(u64, ConnectionTrafficSecrets), rustls::Error> {
        match self {
            Self::Client(k) => k.update_rx_secret(),
            Self::Server(k) => k.update_rx_secret(),
        }
    }

    fn update_tx(&mut self) -> Result<(u64, ConnectionTrafficSecrets), rustls::Error> {
        match self {
            Self::Client(k) => k.update_tx_secret(),
            Self::Server(k) => k.update_tx_secret(),
        }
    }

    fn is_client(&self) -> bool {
        matches!(self, Self::Client(_))
    }
}
