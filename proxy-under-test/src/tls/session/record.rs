//! TLS record protection with ring's AEADs, in place: TLS 1.3 (AES-128/256-GCM,
//! ChaCha20-Poly1305; nonce = iv XOR seq, AAD = the record header, inner content type) and
//! TLS 1.2 (AES-GCM with the 8-byte explicit nonce, ChaCha20-Poly1305; AAD = seq, type, version,
//! plaintext length). Pure: no I/O, no rustls state beyond the extracted secrets.

use std::ops::Range;

use ring::aead::{self, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use rustls::ConnectionTrafficSecrets;

use super::SessionError;

/// A record header: type, version, length.
pub(crate) const HEADER_LEN: usize = 5;
/// Largest plaintext a record may carry (2^14).
pub(crate) const MAX_PLAINTEXT: usize = 1 << 14;
/// Largest ciphertext (record body) accepted: 2^14 + 256.
pub(crate) const MAX_CIPHERTEXT: usize = MAX_PLAINTEXT + 256;
/// Largest whole record accepted from the wire.
pub(crate) const MAX_RECORD: usize = HEADER_LEN + MAX_CIPHERTEXT;
const TAG_LEN: usize = 16;
const GCM_EXPLICIT: usize = 8;

/// Record content types.
pub(crate) mod content {
    pub(crate) const ALERT: u8 = 21;
    pub(crate) const HANDSHAKE: u8 = 22;
    pub(crate) const APPLICATION_DATA: u8 = 23;
}

/// The protocol version the keys belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Version {
    Tls12,
    Tls13,
}

/// One direction's key, iv and sequence number.
struct Keys {
    key: LessSafeKey,
    iv: [u8; NONCE_LEN],
    seq: u64,
    /// TLS 1.2 AES-GCM: explicit nonce in the record.
    explicit: bool,
}

impl Keys {
    fn new(
        version: Version,
        seq: u64,
        secrets: &ConnectionTrafficSecrets,
    ) -> Result<Self, SessionError> {
        let (alg, key, iv, gcm) = match secrets {
            ConnectionTrafficSecrets::Aes128Gcm { key, iv } => (&aead::AES_128_GCM, key, iv, true),
            ConnectionTrafficSecrets::Aes256Gcm { key, iv } => (&aead::AES_256_GCM, key, iv, true),
            ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv } => {
                (&aead::CHACHA20_POLY1305, key, iv, false)
            }
            _ => return Err(SessionError::UnsupportedSuite),
        };
        let key = UnboundKey::new(alg, key.as_ref()).map_err(|_| SessionError::UnsupportedSuite)?;
        let iv: [u8; NONCE_LEN] = iv
            .as_ref()
            .try_into()
            .map_err(|_| SessionError::UnsupportedSuite)?;
        Ok(Self {
            key: LessSafeKey::new(key),
            iv,
            seq,
            explicit: gcm && version == Version::Tls12,
        })
    }

    /// iv XOR the sequence number (left-padded to the nonce length).
    fn nonce(&self) -> [u8; NONCE_LEN] {
        let mut n = self.iv;
        for (b, s) in n[4..].iter_mut().zip(self.seq.to_be_bytes()) {
            *b ^= s;
        }
        n
    }

    fn next_seq(&mut self) -> Result<u64, SessionError> {
        let seq = self.seq;
        self.seq = seq.checked_add(1).ok_or(SessionError::Limit)?;
        Ok(seq)
    }
}

fn tls12_aad(seq: u64, typ: u8, version: [u8; 2], len: usize) -> [u8; 13] {
    let mut a = [0u8; 13];
    a[..8].copy_from_slice(&seq.to_be_bytes());
    a[8] = typ;
    a[9..11].copy_from_slice(&version);
    a[11..].copy_from_slice(&u16::try_from(len).unwrap_or(u16::MAX).to_be_bytes());
    a
}

/// Opens records received from the peer.
pub(crate) struct Opener {
    keys: Keys,
    version: Version,
}

impl Opener {
    pub(crate) fn new(
        version: Version,
        seq: u64,
        secrets: &ConnectionTrafficSecrets,
    ) -> Result<Self, SessionError> {
        Ok(Self {
            keys: Keys::new(version, seq, secrets)?,
            version,
        })
    }

    /// New keys (TLS 1.3 KeyUpdate), sequence restarting at `seq`.
    pub(crate) fn rekey(
        &mut self,
        seq: u64,
        secrets: &ConnectionTrafficSecrets,
    ) -> Result<(), SessionError> {
        self.keys = Keys::new(self.version, seq, secrets)?;
        Ok(())
    }

    pub(crate) fn version(&self) -> Version {
        self.version
    }

    /// The whole length (header included) of the record starting `buf`, once its header is in;
    /// an error when the header announces more than [`MAX_CIPHERTEXT`].
    pub(crate) fn record_len(buf: &[u8]) -> Result<Option<usize>, SessionError> {
        let Some(h) = buf.get(..HEADER_LEN) else {
            return Ok(None);
        };
        let len = usize::from(u16::from_be_bytes([h[3], h[4]]));
        if len > MAX_CIPHERTEXT {
            return Err(SessionError::RecordOverflow(len));
        }
        Ok(Some(HEADER_LEN + len))
    }

    /// Decrypts the complete record `rec` (header included) in place: its content type and
    /// where in `rec` its plaintext now is. Nothing is returned for a record that fails.
    pub(crate) fn open(&mut self, rec: &mut [u8]) -> Result<(u8, Range<usize>), SessionError> {
        let (header, body) = rec.split_at_mut(HEADER_LEN);
        let typ = header[0];
        match self.version {
            Version::Tls13 => {
                if typ != content::APPLICATION_DATA {
                    return Err(SessionError::UnexpectedMessage(typ));
                }
                let nonce = Nonce::assume_unique_for_key(self.keys.nonce());
                let plain = self
                    .keys
                    .key
                    .open_in_place(nonce, Aad::from(&*header), body)
                    .map_err(|_| SessionError::BadRecordMac)?;
                let Some(end) = plain.iter().rposition(|b| *b != 0) else {
                    return Err(SessionError::UnexpectedMessage(0));
                };
                if end > MAX_PLAINTEXT {
                    return Err(SessionError::RecordOverflow(end));
                }
                let inner = plain[end];
                self.keys.next_seq()?;
                Ok((inner, HEADER_LEN..HEADER_LEN + end))
            }
            Version::Tls12 => {
                let version = [header[1], header[2]];
                let skip = if self.keys.explicit { GCM_EXPLICIT } else { 0 };
                if body.len() < skip + TAG_LEN {
                    return Err(SessionError::BadRecordMac);
                }
                let nonce = if self.keys.explicit {
                    let mut n = [0u8; NONCE_LEN];
                    n[..4].copy_from_slice(&self.keys.iv[..4]);
                    n[4..].copy_from_slice(&body[..GCM_EXPLICIT]);
                    n
                } else {
                    self.keys.nonce()
                };
                let len = body.len() - skip - TAG_LEN;
                let aad = tls12_aad(self.keys.seq, typ, version, len);
                let plain = self
                    .keys
                    .key
                    .open_in_place(
                        Nonce::assume_unique_for_key(nonce),
                        Aad::from(aad),
                        &mut body[skip..],
                    )
                    .map_err(|_| SessionError::BadRecordMac)?;
                if plain.len() > MAX_PLAINTEXT {
                    return Err(SessionError::RecordOverflow(plain.len()));
                }
                self.keys.next_seq()?;
                let start = HEADER_LEN + skip;
                Ok((typ, start..start + len))
            }
        }
    }
}

/// Seals records sent to the peer.
pub(crate) struct Sealer {
    keys: Keys,
    version: Version,
    /// Records one key may seal (the suite's confidentiality limit).
    limit: u64,
}

impl Sealer {
    pub(crate) fn new(
        version: Version,
        seq: u64,
        secrets: &ConnectionTrafficSecrets,
        limit: u64,
    ) -> Result<Self, SessionError> {
        Ok(Self {
            keys: Keys::new(version, seq, secrets)?,
            version,
            limit,
        })
    }

    /// New keys (after our TLS 1.3 KeyUpdate), sequence restarting at `seq`.
    pub(crate) fn rekey(
        &mut self,
        seq: u64,
        secrets: &ConnectionTrafficSecrets,
    ) -> Result<(), SessionError> {
        self.keys = Keys::new(self.version, seq, secrets)?;
        Ok(())
    }

    pub(crate) fn version(&self) -> Version {
        self.version
    }

    /// Whether only one record (a KeyUpdate) is left before the confidentiality limit.
    pub(crate) fn at_limit(&self) -> bool {
        self.keys.seq.saturating_add(1) >= self.limit
    }

    /// Whether fewer than `n` records are left before the confidentiality limit.
    pub(crate) fn at_limit_within(&self, n: u64) -> bool {
        self.keys.seq.saturating_add(n) >= self.limit
    }

    /// Test only: a lower confidentiality limit, `records` from now.
    #[cfg(test)]
    pub(crate) fn set_limit(&mut self, records: u64) {
        self.limit = self.keys.seq + records;
    }

    /// Bytes before the payload in a sealed record.
    pub(crate) fn prefix(&self) -> usize {
        HEADER_LEN + if self.keys.explicit { GCM_EXPLICIT } else { 0 }
    }

    /// Bytes after the payload in a sealed record (inner type, tag).
    pub(crate) fn suffix(&self) -> usize {
        TAG_LEN + usize::from(self.version == Version::Tls13)
    }

    /// Seals, in `buf`, the record whose `len`-byte payload (at most [`MAX_PLAINTEXT`]) the
    /// caller put at `buf[prefix()..]`; `buf` must hold `prefix() + len + suffix()` bytes.
    /// Returns the record's length.
    pub(crate) fn seal(
        &mut self,
        typ: u8,
        buf: &mut [u8],
        len: usize,
    ) -> Result<usize, SessionError> {
        if self.keys.seq >= self.limit {
            return Err(SessionError::Limit);
        }
        let total = self.prefix() + len + self.suffix();
        let buf = buf
            .get_mut(..total)
            .ok_or(SessionError::RecordOverflow(len))?;
        let nonce = self.keys.nonce();
        let seq = self.keys.next_seq()?;
        let body =
            u16::try_from(total - HEADER_LEN).map_err(|_| SessionError::RecordOverflow(len))?;
        let (header, rest) = buf.split_at_mut(HEADER_LEN);
        header[1..3].copy_from_slice(&[3, 3]);
        header[3..5].copy_from_slice(&body.to_be_bytes());
        let mut aad = [0u8; 13];
        let (sealed, aad) = match self.version {
            Version::Tls13 => {
                header[0] = content::APPLICATION_DATA;
                rest[len] = typ;
                aad[..HEADER_LEN].copy_from_slice(header);
                (&mut rest[..=len], &aad[..HEADER_LEN])
            }
            Version::Tls12 => {
                header[0] = typ;
                aad = tls12_aad(seq, typ, [3, 3], len);
                let skip = if self.keys.explicit {
                    rest[..GCM_EXPLICIT].copy_from_slice(&nonce[4..]);
                    GCM_EXPLICIT
                } else {
                    0
                };
                (&mut rest[skip..skip + len], &aad[..])
            }
        };
        let tag = self
            .keys
            .key
            .seal_in_place_separate_tag(Nonce::assume_unique_for_key(nonce), Aad::from(aad), sealed)
            .map_err(|_| SessionError::Limit)?;
        buf[total - TAG_LEN..].copy_from_slice(tag.as_ref());
        Ok(total)
    }
}
