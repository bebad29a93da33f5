//! Small text encodings the CA shares: Consul's colon hex, RFC 3339 times as Go's JSON writes
//! them, PEM armour, the base36 unique ids in root names, and Go's URL path escaping for SPIFFE
//! IDs.

use base64::Engine as _;
use rand::Rng;
use sha1::{Digest as _, Sha1};
use sha2::Sha256;
use time::{OffsetDateTime, UtcOffset};

/// Lowercase colon-separated hex (`connect.HexString` in Consul): `[0x1a, 0x2b]` -> `"1a:2b"`.
pub(crate) fn colon_hex(bytes: &[u8]) -> String {
    let parts: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
    parts.join(":")
}

/// The big-endian bytes of a serial without leading zeros (Go's `big.Int.Bytes()`); zero is
/// empty, as in Go.
pub(crate) fn serial_bytes(serial: u64) -> Vec<u8> {
    serial
        .to_be_bytes()
        .into_iter()
        .skip_while(|b| *b == 0)
        .collect()
}

/// A leaf's `SerialNumber` text: colon hex of the minimal big-endian bytes (`8` -> `"08"`).
pub(crate) fn serial_hex(serial: u64) -> String {
    colon_hex(&serial_bytes(serial))
}

/// SHA-256 of `data` (Consul's key ids: SHA-256 of the PKIX SubjectPublicKeyInfo, all 32 bytes).
pub(crate) fn sha256(data: &[u8]) -> Vec<u8> {
    Sha256::digest(data).to_vec()
}

/// A CARoot `ID`: the SHA-1 fingerprint of the certificate DER, colon hex.
pub(crate) fn fingerprint(der: &[u8]) -> String {
    colon_hex(&Sha1::digest(der))
}

/// `now` in UTC, truncated to whole seconds: X.509 times carry seconds only, and Consul reports
/// the times parsed back from the certificates.
pub(crate) fn cert_time(now: OffsetDateTime) -> OffsetDateTime {
    let utc = now.to_offset(UtcOffset::UTC);
    utc - time::Duration::nanoseconds(i64::from(utc.nanosecond()))
}

/// `t + d`, or `None` when it would leave `OffsetDateTime`'s range.
pub(crate) fn checked_add(t: OffsetDateTime, d: std::time::Duration) -> Option<OffsetDateTime> {
    t.checked_add(time::Duration::try_from(d).ok()?)
}

/// RFC 3339 as Go's `time.Time` JSON encoding writes a whole-second UTC time:
/// `2025-05-21T16:32:28Z`.
pub(crate) fn rfc3339(t: OffsetDateTime) -> String {
    let t = cert_time(t);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// PEM armour as Go's `pem.Encode` writes it: 64-character base64 lines, `\n` line ends, a
/// trailing newline after the END line.
pub(crate) fn pem_encode(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        // base64 output is ASCII, so every chunk is valid UTF-8.
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// Eight lowercase base36 characters, like the truncated `connect.CompactUID()` in root names.
pub(crate) fn base36_uid(rng: &mut impl Rng) -> String {
    const ALPHABET: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    (0..8)
        .map(|_| char::from(ALPHABET[rng.random_range(0..36)]))
        .collect()
}

/// A random (version 4) UUID string drawn from `rng`, lowercase.
pub(crate) fn random_uuid(rng: &mut impl Rng) -> String {
    let bytes: [u8; 16] = rng.random();
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .to_string()
}

/// Escapes one SPIFFE path segment the way Go's `url.URL.String()` escapes a path: unreserved
/// characters and `$&+,/:;=@` stay, everything else becomes `%XX` (uppercase hex).
pub(crate) fn go_path_escape(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        let keep = b.is_ascii_alphanumeric() || b"-_.~$&+,/:;=@".contains(&b);
        if keep {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use time::macros::datetime;

    #[test]
    fn colon_hex_is_lowercase_and_joined() {
        assert_eq!(colon_hex(&[0x1a, 0x2b]), "1a:2b");
        assert_eq!(colon_hex(&[0xff]), "ff");
        assert_eq!(colon_hex(&[]), "");
    }

    #[test]
    fn serials_format_like_go_big_int_bytes() {
        assert_eq!(serial_hex(8), "08");
        assert_eq!(serial_hex(0x1a2b), "1a:2b");
        // No sign padding: DER would encode 0x80 as 00 80, Go's Bytes() does not.
        assert_eq!(serial_hex(0x80), "80");
        assert_eq!(serial_hex(0x0100), "01:00");
    }

    proptest::proptest! {
        #[test]
        fn serial_hex_round_trips_without_leading_zero_bytes(n in 1u64..) {
            let text = serial_hex(n);
            let parts: Vec<&str> = text.split(':').collect();
            proptest::prop_assert_ne!(parts[0], "00");
            proptest::prop_assert!(parts.iter().all(|p| p.len() == 2));
            let back = u64::from_str_radix(&parts.concat(), 16).unwrap();
            proptest::prop_assert_eq!(back, n);
        }
    }

    #[test]
    fn rfc3339_is_utc_whole_seconds() {
        let t = datetime!(2025-05-21 18:32:28.75 +02:00);
        assert_eq!(rfc3339(t), "2025-05-21T16:32:28Z");
        assert_eq!(cert_time(t), datetime!(2025-05-21 16:32:28 UTC));
    }

    #[test]
    fn pem_lines_are_64_wide_and_newline_terminated() {
        let pem = pem_encode("EC PRIVATE KEY", &[7u8; 100]);
        let lines: Vec<&str> = pem.lines().collect();
        assert_eq!(lines[0], "-----BEGIN EC PRIVATE KEY-----");
        assert_eq!(lines[1].len(), 64);
        assert_eq!(lines.last().copied(), Some("-----END EC PRIVATE KEY-----"));
        assert!(pem.ends_with("-----\n"));
    }

    #[test]
    fn uid_and_uuid_come_from_the_rng() {
        let mut a = rand::rngs::StdRng::seed_from_u64(1);
        let mut b = rand::rngs::StdRng::seed_from_u64(1);
        let uid = base36_uid(&mut a);
        assert_eq!(uid, base36_uid(&mut b));
        assert_eq!(uid.len(), 8);
        assert!(
            uid.bytes()
                .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
        );
        let id = random_uuid(&mut a);
        assert!(uuid::Uuid::parse_str(&id).is_ok());
        assert_eq!(id.as_bytes()[14], b'4', "version 4: {id}");
    }

    #[test]
    fn path_escape_matches_go() {
        assert_eq!(go_path_escape("web-1_a.b~"), "web-1_a.b~");
        assert_eq!(go_path_escape("a b"), "a%20b");
        assert_eq!(go_path_escape("ü"), "%C3%BC");
        assert_eq!(go_path_escape("x@y:z"), "x@y:z");
    }
}
