//! Durations in scenario files: Go's `time.ParseDuration` syntax (`1.5s`, `300ms`, `1h2m`), and
//! named timeouts (`propagation`, `stable`, ...) resolved against [`Timeouts`]. The Go syntax is
//! read by the workspace's one Go parser (`go-compat`, the simulator's bottom floor, a crate of its
//! own so this crate needs nothing from agent-sim).

use std::time::Duration;

use thiserror::Error;

use crate::timeouts::{DEFAULTS, Timeouts};

/// A duration that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DurationError {
    /// Not Go duration syntax (Go's own message).
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
    /// A negative duration (Go accepts them; a scenario cannot wait a negative time).
    #[error("negative duration {0:?}")]
    Negative(String),
    /// Neither a named timeout nor a Go duration.
    #[error("{text:?} is neither a Go duration nor a named timeout ({known})")]
    NotATimeout {
        /// The text.
        text: String,
        /// The known names, comma separated.
        known: String,
    },
}

impl From<go_compat::duration::DurationError> for DurationError {
    fn from(e: go_compat::duration::DurationError) -> Self {
        use go_compat::duration::DurationError as Go;
        match e {
            Go::Invalid(text) => Self::Invalid(text),
            Go::MissingUnit(text) => Self::MissingUnit(text),
            Go::UnknownUnit { unit, text } => Self::UnknownUnit { unit, text },
        }
    }
}

/// Parses a Go duration string with the workspace's one Go parser
/// ([`go_compat::duration::parse_nanos`]): an optional sign, then one or more decimal numbers,
/// each with an optional fraction and a unit (`ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`); `0`
/// alone needs no unit. Negative values are refused.
pub fn parse_go_duration(text: &str) -> Result<Duration, DurationError> {
    let nanos = go_compat::duration::parse_nanos(text)?;
    let nanos = u64::try_from(nanos).map_err(|_| DurationError::Negative(text.to_owned()))?;
    Ok(Duration::from_nanos(nanos))
}

/// Whether `name` is one of the named timeouts of [`DEFAULTS`].
pub fn is_named_timeout(name: &str) -> bool {
    DEFAULTS.iter().any(|(n, _)| *n == name)
}

/// Checks a `within`/`stable_for`/`idle` value without resolving it: a named timeout or a Go
/// duration.
pub(crate) fn check_timeout_ref(text: &str) -> Result<(), DurationError> {
    if is_named_timeout(text) {
        return Ok(());
    }
    match parse_go_duration(text) {
        Ok(_) => Ok(()),
        Err(DurationError::Invalid(_)) if text.bytes().all(|b| b.is_ascii_alphabetic()) => {
            Err(DurationError::NotATimeout {
                text: text.to_owned(),
                known: DEFAULTS
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", "),
            })
        }
        Err(e) => Err(e),
    }
}

impl Timeouts {
    /// Resolves a `within`/`stable_for`/`idle` value: a named timeout (with its overridden value)
    /// or a Go duration.
    pub fn resolve(&self, text: &str) -> Result<Duration, DurationError> {
        if let Some(d) = self.get(text) {
            return Ok(d);
        }
        check_timeout_ref(text)?;
        parse_go_duration(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Duration {
        parse_go_duration(s).unwrap()
    }

    #[test]
    fn go_examples() {
        // Cases from Go's time.ParseDuration tests.
        assert_eq!(ok("0"), Duration::ZERO);
        assert_eq!(ok("5s"), Duration::from_secs(5));
        assert_eq!(ok("30s"), Duration::from_secs(30));
        assert_eq!(ok("1478s"), Duration::from_secs(1478));
        assert_eq!(ok("+5s"), Duration::from_secs(5));
        assert_eq!(ok("-0"), Duration::ZERO);
        assert_eq!(ok("5.0s"), Duration::from_secs(5));
        assert_eq!(ok("5.6s"), Duration::from_millis(5600));
        assert_eq!(ok("5.s"), Duration::from_secs(5));
        assert_eq!(ok(".5s"), Duration::from_millis(500));
        assert_eq!(ok("1.004s"), Duration::from_millis(1004));
        assert_eq!(ok("100.00100s"), Duration::from_millis(100_001));
        assert_eq!(ok("10ns"), Duration::from_nanos(10));
        assert_eq!(ok("11us"), Duration::from_micros(11));
        assert_eq!(ok("12µs"), Duration::from_micros(12));
        assert_eq!(ok("12μs"), Duration::from_micros(12));
        assert_eq!(ok("13ms"), Duration::from_millis(13));
        assert_eq!(ok("14s"), Duration::from_secs(14));
        assert_eq!(ok("15m"), Duration::from_secs(15 * 60));
        assert_eq!(ok("16h"), Duration::from_secs(16 * 3600));
        assert_eq!(ok("3h30m"), Duration::from_secs(3 * 3600 + 30 * 60));
        assert_eq!(
            ok("10.5s4m"),
            Duration::from_secs(4 * 60 + 10) + Duration::from_millis(500)
        );
        assert_eq!(ok("1h1m1s1ms1us1ns"), Duration::new(3661, 1_001_001));
        assert_eq!(ok("39h9m14.425s"), Duration::new(140_954, 425_000_000));
        assert_eq!(ok("52763797000ns"), Duration::new(52, 763_797_000));
        assert_eq!(ok("0.3333333333333333333h"), Duration::from_secs(20 * 60));
        assert_eq!(
            ok("9007199254740993ns"),
            Duration::from_nanos(9_007_199_254_740_993)
        );
        assert_eq!(
            ok("9223372036854775807ns"),
            Duration::from_nanos(i64::MAX as u64)
        );
        assert_eq!(ok("0.100000000000000000000h"), Duration::from_secs(360));
    }

    #[test]
    fn go_errors() {
        for bad in [
            "",
            "3",
            "-",
            "s",
            ".",
            "-.",
            ".s",
            "+.s",
            "1d",
            "1.2.3s",
            "x5s",
            "9223372036854775808ns",
            "3000000h",
            "5s ",
        ] {
            assert!(parse_go_duration(bad).is_err(), "{bad:?} must be refused");
        }
        assert_eq!(
            parse_go_duration("3").unwrap_err().to_string(),
            "time: missing unit in duration \"3\""
        );
        assert_eq!(
            parse_go_duration("1d").unwrap_err().to_string(),
            "time: unknown unit \"d\" in duration \"1d\""
        );
        assert_eq!(
            parse_go_duration("-5s").unwrap_err(),
            DurationError::Negative("-5s".into())
        );
    }

    #[test]
    fn named_timeouts_resolve_with_overrides() {
        let mut t = Timeouts::default();
        assert_eq!(t.resolve("propagation").unwrap(), Duration::from_secs(5));
        t.set("propagation", Duration::from_secs(9)).unwrap();
        assert_eq!(t.resolve("propagation").unwrap(), Duration::from_secs(9));
        assert_eq!(t.resolve("250ms").unwrap(), Duration::from_millis(250));
        let e = t.resolve("propogation").unwrap_err().to_string();
        assert!(
            e.contains("neither a Go duration nor a named timeout"),
            "{e}"
        );
        assert!(e.contains("propagation"), "{e}");
        assert!(is_named_timeout("stable"));
        assert!(!is_named_timeout("5s"));
    }
}
