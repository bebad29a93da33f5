//! The one error of the crate's loading and validation: which file, which line, which field, and
//! what is wrong. Also the field paths (`steps[3].check.identity`) the loader and validator build.

use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// A scenario that cannot be loaded or is not valid.
///
/// Displayed as `catalogue/core/x.toml:12: steps[3].check.identity: unknown variant ...`; the line
/// and the field are left out when unknown.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub struct ScenarioError {
    /// The file (as given to [`crate::parse`]); the scenario id when only a parsed scenario was
    /// at hand ([`crate::validate`] on its own).
    pub path: String,
    /// 1-based line in the file.
    pub line: Option<usize>,
    /// The field, e.g. `steps[3].check.identity`.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": {field}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Seg {
    /// A table key.
    Key(String),
    /// An array index.
    Index(usize),
}

/// A field path, e.g. `steps[3].check.identity`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FieldPath(pub(crate) Vec<Seg>);

impl FieldPath {
    /// The root (the whole file).
    pub(crate) fn root() -> Self {
        Self(Vec::new())
    }

    /// This path plus a key.
    pub(crate) fn key(&self, key: &str) -> Self {
        let mut segs = self.0.clone();
        segs.push(Seg::Key(key.to_owned()));
        Self(segs)
    }

    /// This path plus an index.
    pub(crate) fn index(&self, index: usize) -> Self {
        let mut segs = self.0.clone();
        segs.push(Seg::Index(index));
        Self(segs)
    }

    /// This path followed by `rest`.
    pub(crate) fn join(&self, rest: &Self) -> Self {
        let mut segs = self.0.clone();
        segs.extend(rest.0.iter().cloned());
        Self(segs)
    }

    /// `None` for the root, else the rendered path.
    pub(crate) fn rendered(&self) -> Option<String> {
        (!self.0.is_empty()).then(|| self.to_string())
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Index(n) => write!(f, "[{n}]")?,
                Seg::Key(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    if is_bare_key(k) {
                        f.write_str(k)?;
                    } else {
                        write!(f, "{k:?}")?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// A TOML bare key: `A-Za-z0-9_-`, not empty.
fn is_bare_key(k: &str) -> bool {
    !k.is_empty()
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// An error found at a field, before the file and line are known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldError {
    pub(crate) field: FieldPath,
    pub(crate) message: String,
}

impl FieldError {
    pub(crate) fn new(field: FieldPath, message: impl Into<String>) -> Self {
        Self {
            field,
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_with_and_without_line_and_field() {
        let mut e = ScenarioError {
            path: "catalogue/core/x.toml".into(),
            line: Some(12),
            field: Some("steps[3].check.identity".into()),
            message: "unknown variant `x`".into(),
        };
        assert_eq!(
            e.to_string(),
            "catalogue/core/x.toml:12: steps[3].check.identity: unknown variant `x`"
        );
        e.line = None;
        assert_eq!(
            e.to_string(),
            "catalogue/core/x.toml: steps[3].check.identity: unknown variant `x`"
        );
        e.field = None;
        e.line = Some(1);
        assert_eq!(
            e.to_string(),
            "catalogue/core/x.toml:1: unknown variant `x`"
        );
    }

    #[test]
    fn paths_render_like_toml() {
        let p = FieldPath::root()
            .key("steps")
            .index(3)
            .key("check")
            .key("identity");
        assert_eq!(p.to_string(), "steps[3].check.identity");
        let q = FieldPath::root()
            .key("setup")
            .key("proxy_config")
            .key("a.b");
        assert_eq!(q.to_string(), "setup.proxy_config.\"a.b\"");
        assert_eq!(FieldPath::root().rendered(), None);
    }
}
