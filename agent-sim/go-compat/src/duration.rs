//! Go `time.Duration` parsing and formatting, as Consul reads `wait`, check intervals and config
//! entry timeouts (`"10s"`, `"1.5h"`, `"300000ms"`) and writes them back (`"1m30s"`).

use std::fmt;
use std::time::Duration;

/// A Go duration: signed nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GoDuration(pub i64);

/// The input was not a Go duration string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("time: invalid duration \"{0}\"")]
pub struct InvalidDuration(pub String);

const NS: i64 = 1;
const US: i64 = 1_000;
const MS: i64 = 1_000_000;
const S: i64 = 1_000_000_000;
const MIN: i64 = 60 * S;
const HOUR: i64 = 60 * MIN;

impl GoDuration {
    /// Parses like Go's `time.ParseDuration`: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, or a bare `0`.
    pub fn parse(input: &str) -> Result<Self, InvalidDuration> {
        let err = || InvalidDuration(input.to_owned());
        let (neg, mut s) = match input.as_bytes().first() {
            Some(b'-') => (true, &input[1..]),
            Some(b'+') => (false, &input[1..]),
            _ => (false, input),
        };
        if s == "0" {
            return Ok(Self(0));
        }
        if s.is_empty() {
            return Err(err());
        }
        let mut total: i128 = 0;
        while !s.is_empty() {
            let int_len = s.bytes().take_while(u8::is_ascii_digit).count();
            let int_part = &s[..int_len];
            s = &s[int_len..];
            let mut frac_part = "";
            if let Some(rest) = s.strip_prefix('.') {
                let frac_len = rest.bytes().take_while(u8::is_ascii_digit).count();
                frac_part = &rest[..frac_len];
                s = &rest[frac_len..];
            }
            if int_part.is_empty() && frac_part.is_empty() {
                return Err(err());
            }
            let unit_len = s
                .char_indices()
                .find(|(_, c)| *c == '.' || c.is_ascii_digit())
                .map_or(s.len(), |(i, _)| i);
            let unit = match &s[..unit_len] {
                "ns" => NS,
                "us" | "µs" | "μs" => US,
                "ms" => MS,
                "s" => S,
                "m" => MIN,
                "h" => HOUR,
                _ => return Err(err()),
            };
            s = &s[unit_len..];
            let whole: i128 = if int_part.is_empty() {
                0
            } else {
                int_part.parse().map_err(|_| err())?
            };
            let mut value = whole.checked_mul(i128::from(unit)).ok_or_else(err)?;
            if !frac_part.is_empty() {
                // Go keeps up to 19 significant fraction digits; a float is plenty here.
                let frac: f64 = format!("0.{frac_part}").parse().map_err(|_| err())?;
                value += (frac * unit as f64) as i128;
            }
            total = total.checked_add(value).ok_or_else(err)?;
            if total > i128::from(i64::MAX) {
                return Err(err());
            }
        }
        let total = i64::try_from(total).map_err(|_| err())?;
        Ok(Self(if neg { -total } else { total }))
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
