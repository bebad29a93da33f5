//! One `catches` entry: a broken behaviour (a `--sabotage` name of the reference proxy, or an
//! environment tamper) and the checks of the scenario that must fail against it.
//!
//! Written either as the bare name (`"ignore-deny"`: some check of the timeline must fail) or
//! as a table naming the checks (`{ sabotage = "ignore-deny", checks = ["web denied"] }`: each
//! of those checks must fail). The self-test holds a trial to it; a failed "proxy ready" or a
//! harness error is never a catch.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

/// A broken behaviour a scenario is proven to catch, and by which checks.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Catch {
    /// The broken behaviour (`BROKEN_BEHAVIOURS` or `ENVIRONMENT_TAMPERS`).
    pub sabotage: String,
    /// The names of the checks (`expect` steps' `name`) that must fail against it; empty for
    /// an entry written as a bare name (any check of the timeline).
    pub checks: Vec<String>,
}

impl Catch {
    /// An entry that names no check (any check of the timeline may catch it).
    pub fn any(sabotage: impl Into<String>) -> Self {
        Self {
            sabotage: sabotage.into(),
            checks: Vec::new(),
        }
    }

    /// An entry that names the checks which must fail.
    pub fn by(sabotage: impl Into<String>, checks: &[&str]) -> Self {
        Self {
            sabotage: sabotage.into(),
            checks: checks.iter().map(|c| (*c).to_owned()).collect(),
        }
    }
}

impl PartialEq<str> for Catch {
    fn eq(&self, other: &str) -> bool {
        self.sabotage == other
    }
}

impl fmt::Display for Catch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.sabotage)?;
        if !self.checks.is_empty() {
            write!(f, " (caught by {})", catch_quoted(&self.checks))?;
        }
        Ok(())
    }
}

/// `"a", "b"`.
pub fn catch_quoted(names: &[String]) -> String {
    let q: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    q.join(", ")
}

impl Serialize for Catch {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.checks.is_empty() {
            return s.serialize_str(&self.sabotage);
        }
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("sabotage", &self.sabotage)?;
        m.serialize_entry("checks", &self.checks)?;
        m.end()
    }
}

impl<'de> Deserialize<'de> for Catch {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CatchVisitor)
    }
}

struct CatchVisitor;

impl<'de> Visitor<'de> for CatchVisitor {
    type Value = Catch;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "a broken behaviour's name, or a table { sabotage = \"NAME\", checks = [\"check name\", ...] }",
        )
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Catch, E> {
        Ok(Catch::any(v))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Catch, A::Error> {
        let mut sabotage: Option<String> = None;
        let mut checks: Option<Vec<String>> = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "sabotage" if sabotage.is_some() => {
                    return Err(de::Error::duplicate_field("sabotage"));
                }
                "checks" if checks.is_some() => return Err(de::Error::duplicate_field("checks")),
                "sabotage" => sabotage = Some(map.next_value()?),
                "checks" => checks = Some(map.next_value()?),
                other => return Err(de::Error::unknown_field(other, &["sabotage", "checks"])),
            }
        }
        let sabotage = sabotage.ok_or_else(|| de::Error::missing_field("sabotage"))?;
        let checks = checks.ok_or_else(|| de::Error::missing_field("checks"))?;
        Ok(Catch { sabotage, checks })
    }
}
