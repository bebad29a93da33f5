//! Go `time.Duration` parsing and formatting, as Consul reads `wait`, check intervals and config
//! entry timeouts (`"10s"`, `"1.5h"`, `"300000ms"`) and writes them back (`"1m30s"`). The one
//! parser of the workspace: the scenario files read their durations with it too.

use std::fmt;
use std::time::Duration;

/// A Go duration: signed nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GoDuration(pub i64);

/// The input was not a Go duration string: the one text agent-sim answers with for every
/// failure (its pinned answers read `time: invalid duration "10"` even where Go's own parser
/// says `missing unit`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("time: invalid duration \"{0}\"")]
pub struct InvalidDuration(pub String);

/// Why a text is not a Go duration, with Go's own texts (`time.ParseDuration`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not Go duration syntax, or out of range.
    #[error("time: invalid duration {0:?}")]
    Invalid(String),
    /// A number without a unit (other than `0`).
    #[error("time: missing unit in duration {0:?}")]
    MissingUnit(String),
    /// A unit Go does not know.
    #[error("time: unknown unit {unit:?} in duration {text:?}")]
    UnknownUnit {
        /// The unit.
        unit: String,
        /// The whole text.
        text: String,
    },
}

impl DurationError {
    /// A stable machine name.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Invalid(_) => "invalid",
            Self::MissingUnit(_) => "missing_unit",
            Self::UnknownUnit { .. } => "unknown_unit",
        }
    }
}

const NS: i64 = 1;
const US: i64 = 1_000;
const MS: i64 = 1_000_000;
const S: i64 = 1_000_000_000;
const MIN: i64 = 60 * S;
const HOUR: i64 = 60 * MIN;

/// `1 << 63`: the largest magnitude Go accepts (for a negative duration).
const LIMIT: u64 = 1 << 63;

/// Go's `time.ParseDuration`, step for step: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, or a bare `0`;
/// units `ns`, `us`/`µs`/`μs`, `ms`, `s`, `m`, `h`; fractions computed as Go does (digits up to
/// the edge of `u64`, then `float64(f) * (float64(unit) / scale)`, truncated); the range of an
/// `int64` of nanoseconds. The one parser of the workspace (agent-sim and the scenario files).
pub fn parse_nanos(text: &str) -> Result<i64, DurationError> {
    let invalid = || DurationError::Invalid(text.to_owned());
    let (neg, mut s) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        let first = s.as_bytes()[0];
        if !(first == b'.' || first.is_ascii_digit()) {
            return Err(invalid());
        }
        let (whole, rest) = leading_int(s).ok_or_else(invalid)?;
        let pre = rest.len() != s.len();
        s = rest;
        let (mut frac, mut scale, mut post) = (0, 1.0, false);
        if let Some(after_dot) = s.strip_prefix('.') {
            let (f, sc, rest) = leading_fraction(after_dot);
            post = rest.len() != after_dot.len();
            (frac, scale, s) = (f, sc, rest);
        }
        if !pre && !post {
            return Err(invalid());
        }
        let unit_len = s
            .bytes()
            .position(|c| c == b'.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        if unit_len == 0 {
            return Err(DurationError::MissingUnit(text.to_owned()));
        }
        let unit = &s[..unit_len];
        s = &s[unit_len..];
        let unit_nanos: u64 = match unit {
            "ns" => NS as u64,
            "us" | "\u{b5}s" | "\u{3bc}s" => US as u64,
            "ms" => MS as u64,
            "s" => S as u64,
            "m" => MIN as u64,
            "h" => HOUR as u64,
            _ => {
                return Err(DurationError::UnknownUnit {
                    unit: unit.to_owned(),
                    text: text.to_owned(),
                });
            }
        };
        if whole > LIMIT / unit_nanos {
            return Err(invalid());
        }
        let mut value = whole * unit_nanos;
        if frac > 0 {
            #[allow(
                clippy::cast_precision_loss,
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss
            )]
            let frac_nanos = (frac as f64 * (unit_nanos as f64 / scale)) as u64;
            value = value.checked_add(frac_nanos).ok_or_else(invalid)?;
            if value > LIMIT {
                return Err(invalid());
            }
        }
        total = total.checked_add(value).ok_or_else(invalid)?;
        if total > LIMIT {
            return Err(invalid());
        }
    }
    if neg {
        // `total <= 1 << 63`, so its negation fits.
        return Ok(0i64.wrapping_sub_unsigned(total));
    }
    i64::try_from(total).map_err(|_| invalid())
}

/// Go's `leadingInt`: the leading digits as a number, `None` when it passes `1 << 63`.
fn leading_int(s: &str) -> Option<(u64, &str)> {
    let len = s.bytes().take_while(u8::is_ascii_digit).count();
    let mut x: u64 = 0;
    for c in s[..len].bytes() {
        if x > LIMIT / 10 {
            return None;
        }
        x = x * 10 + u64::from(c - b'0');
        if x > LIMIT {
            return None;
        }
    }
    Some((x, &s[len..]))
}

/// Go's `leadingFraction`: the fraction digits as a number and its scale, ignoring the digits
/// past the precision of a `u64`.
fn leading_fraction(s: &str) -> (u64, f64, &str) {
    let len = s.bytes().take_while(u8::is_ascii_digit).count();
    let (mut x, mut scale, mut overflow) = (0u64, 1.0f64, false);
    for c in s[..len].bytes() {
        if overflow {
            continue;
        }
        if x > (LIMIT - 1) / 10 {
            overflow = true;
            continue;
        }
        let y = x * 10 + u64::from(c - b'0');
        if y > LIMIT {
            overflow = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, &s[len..])
}

impl GoDuration {
    /// Parses like Go's `time.ParseDuration` ([`parse_nanos`]); every failure is
    /// [`InvalidDuration`].
    pub fn parse(input: &str) -> Result<Self, InvalidDuration> {
        parse_nanos(input)
            .map(Self)
            .map_err(|_| InvalidDuration(input.to_owned()))
    }

    /// The duration as a std `Duration`; negative values become zero.
    pub fn to_std(self) -> Duration {
        Duration::from_nanos(u64::try_from(self.0).unwrap_or(0))
    }

    /// From a std `Duration`, saturating.
    pub fn from_std(d: Duration) -> Self {
        Self(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    }
}

impl fmt::Display for GoDuration {
    /// Formats like Go's `Duration.String()`: `72h0m0s`, `1m30s`, `1.5s`, `300ms`, `0s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let neg = self.0 < 0;
        let u = self.0.unsigned_abs();
        let sign = if neg { "-" } else { "" };
        if u == 0 {
            return f.write_str("0s");
        }
        if u < S as u64 {
            let (unit, div) = if u < US as u64 {
                ("ns", 1)
            } else if u < MS as u64 {
                ("µs", US as u64)
            } else {
                ("ms", MS as u64)
            };
            return write!(f, "{sign}{}{unit}", frac_str(u, div));
        }
        let secs_total = u / S as u64;
        let nanos = u % S as u64;
        let hours = secs_total / 3600;
        let mins = (secs_total % 3600) / 60;
        let secs = secs_total % 60;
        let sec_str = frac_str(secs * S as u64 + nanos, S as u64);
        if hours > 0 {
            write!(f, "{sign}{hours}h{mins}m{sec_str}s")
        } else if mins > 0 {
            write!(f, "{sign}{mins}m{sec_str}s")
        } else {
            write!(f, "{sign}{sec_str}s")
        }
    }
}

/// `v / div` with the fraction printed without trailing zeros (`1500, 1000` -> `1.5`).
fn frac_str(v: u64, div: u64) -> String {
    let whole = v / div;
    let rem = v % div;
    if rem == 0 {
        return whole.to_string();
    }
    let width = div.ilog10() as usize;
    let frac = format!("{rem:0width$}");
    format!("{whole}.{}", frac.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_forms() {
        let cases = [
            ("10s", 10 * S),
            ("300000ms", 300 * S),
            ("1.5h", 90 * MIN),
            ("1h30m", 90 * MIN),
            ("0", 0),
            ("-5s", -5 * S),
            ("+2m", 2 * MIN),
            (".5s", S / 2),
            ("1µs", US),
            ("100ns", 100),
        ];
        for (input, want) in cases {
            assert_eq!(GoDuration::parse(input), Ok(GoDuration(want)), "{input}");
        }
    }

    #[test]
    fn rejects_what_go_rejects() {
        for bad in [
            "",
            "10",
            "s",
            "1x",
            "abc",
            "1.s.",
            "-",
            "1h-1m",
            "99999999999999h",
        ] {
            assert!(GoDuration::parse(bad).is_err(), "{bad:?} should fail");
        }
    }

    #[test]
    fn go_parse_duration_table() {
        // Cases from Go's time.ParseDuration tests.
        let cases: &[(&str, i64)] = &[
            ("-0", 0),
            ("5.0s", 5 * S),
            ("5.6s", 5600 * MS),
            ("5.s", 5 * S),
            ("1.004s", 1004 * MS),
            ("100.00100s", 100_001 * MS),
            ("12\u{3bc}s", 12 * US),
            ("3h30m", 3 * HOUR + 30 * MIN),
            ("10.5s4m", 4 * MIN + 10 * S + 500 * MS),
            ("1h1m1s1ms1us1ns", HOUR + MIN + S + MS + US + 1),
            ("39h9m14.425s", 39 * HOUR + 9 * MIN + 14 * S + 425 * MS),
            ("52763797000ns", 52_763_797_000),
            ("0.3333333333333333333h", 20 * MIN),
            ("9007199254740993ns", 9_007_199_254_740_993),
            ("9223372036854775807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
            ("0.100000000000000000000h", 6 * MIN),
        ];
        for (input, want) in cases {
            assert_eq!(parse_nanos(input), Ok(*want), "{input}");
        }
        for bad in [
            ".",
            "-.",
            ".s",
            "+.s",
            "1d",
            "1.2.3s",
            "x5s",
            "5s ",
            "3000000h",
            "9223372036854775808ns",
        ] {
            assert!(parse_nanos(bad).is_err(), "{bad:?} should fail");
        }
    }

    #[test]
    fn go_error_texts() {
        assert_eq!(
            parse_nanos("3").unwrap_err().to_string(),
            "time: missing unit in duration \"3\""
        );
        assert_eq!(
            parse_nanos("1d").unwrap_err().to_string(),
            "time: unknown unit \"d\" in duration \"1d\""
        );
        assert_eq!(
            parse_nanos("x").unwrap_err().to_string(),
            "time: invalid duration \"x\""
        );
        // agent-sim's one text, whatever the cause.
        assert_eq!(
            GoDuration::parse("10").unwrap_err().to_string(),
            "time: invalid duration \"10\""
        );
    }

    #[test]
    fn formats_like_go() {
        let cases = [
            (0, "0s"),
            (5 * S, "5s"),
            (90 * S, "1m30s"),
            (72 * HOUR, "72h0m0s"),
            (S + S / 2, "1.5s"),
            (300 * MS, "300ms"),
            (1500, "1.5µs"),
            (-2 * S, "-2s"),
        ];
        for (ns, want) in cases {
            assert_eq!(GoDuration(ns).to_string(), want);
        }
    }
}
