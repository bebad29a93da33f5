//! Request-path normalization as Envoy's HTTP connection manager does it before any filter
//! (RBAC included) or the router sees the request, with the options Consul's `mesh` config entry
//! sets (`HTTP.Incoming.RequestNormalization`; Consul 1.20.1+, CVE-2024-10005):
//!
//! 1. a path with a fragment (`#`) is rejected;
//! 2. `PathWithEscapedSlashesAction`: `%2F`/`%5C` (any case) kept (the default), rejected, or
//!    unescaped and then forwarded or redirected;
//! 3. `normalize_path` (on unless `InsecureDisablePathNormalization`): a segment that is a
//!    literal `.` or `..` followed by `;` and path parameters counts as that dot segment (its
//!    parameters dropped: Envoy 1.40 forwards `/x/..;p/admin` as `/admin`), then RFC 3986
//!    dot-segment removal, `\` to `/`, %-escapes of unreserved characters decoded, characters that may not
//!    stand in a path escaped: Envoy's snapshot of Chromium's `CanonicalizePath`
//!    (`source/common/chromium_url/url_canon_path.cc`), applied to the path only, the query kept;
//! 4. `MergeSlashes`: runs of `/` merged (off by default; not part of RFC 3986).
//!
//! Authorization must see the path this returns, and the application receives it: that is what
//! keeps `/%61dmin`, `/./admin` and `/x/../admin` from slipping past a `PathPrefix /admin` deny.

mod canonical;

use std::borrow::Cow;

/// What `PathWithEscapedSlashesAction` does with `%2F` and `%5C` (Envoy's enum; Consul's
/// `IMPLEMENTATION_SPECIFIC_DEFAULT` and the empty string are `KeepUnchanged`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EscapedSlashes {
    /// Leave them escaped (Envoy's default).
    #[default]
    KeepUnchanged,
    /// Answer 400.
    RejectRequest,
    /// Unescape, then redirect the client to the unescaped path (307).
    UnescapeAndRedirect,
    /// Unescape and carry on.
    UnescapeAndForward,
}

/// The request-normalization options (Consul's defaults with no `mesh` entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathNormalization {
    /// `normalize_path` (Consul: `!InsecureDisablePathNormalization`).
    pub normalize_path: bool,
    /// `merge_slashes`.
    pub merge_slashes: bool,
    /// `path_with_escaped_slashes_action`.
    pub escaped_slashes: EscapedSlashes,
}

impl Default for PathNormalization {
    fn default() -> Self {
        Self {
            normalize_path: true,
            merge_slashes: false,
            escaped_slashes: EscapedSlashes::KeepUnchanged,
        }
    }
}

/// What becomes of a request's `:path` (path and query).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathAction {
    /// Carry on with this path and query (the original when nothing changed).
    Forward(String),
    /// Answer 307 with this `Location`.
    Redirect(String),
    /// Answer 400; the reason is for the log.
    Reject(&'static str),
}

impl PathNormalization {
    /// Normalizes `path_and_query` (a request's origin-form target) as Envoy would.
    pub fn apply(&self, path_and_query: &str) -> PathAction {
        if path_and_query.contains('#') {
            return PathAction::Reject("path with a fragment");
        }
        let (path, query) = match path_and_query.find('?') {
            Some(i) => path_and_query.split_at(i),
            None => (path_and_query, ""),
        };
        let mut path = Cow::Borrowed(path);
        let mut redirect = false;
        if self.escaped_slashes != EscapedSlashes::KeepUnchanged
            && let Some(unescaped) = unescape_slashes(&path)
        {
            match self.escaped_slashes {
                EscapedSlashes::RejectRequest => {
                    return PathAction::Reject("path with escaped slashes");
                }
                EscapedSlashes::UnescapeAndRedirect => redirect = true,
                EscapedSlashes::UnescapeAndForward | EscapedSlashes::KeepUnchanged => {}
            }
            path = unescaped.into();
        }
        if self.normalize_path {
            if let Some(plain) = dot_segment_params(&path) {
                path = plain.into();
            }
            match canonical::canonicalize(&path) {
                Some(Cow::Owned(c)) => path = Cow::Owned(c),
                Some(Cow::Borrowed(_)) => {}
                None => return PathAction::Reject("path normalization failed"),
            }
        }
        if self.merge_slashes
            && let Some(merged) = merge_slashes(&path)
        {
            path = merged.into();
        }
        let full = if query.is_empty() {
            path.into_owned()
        } else {
            format!("{path}{query}")
        };
        if redirect {
            PathAction::Redirect(full)
        } else {
            PathAction::Forward(full)
        }
    }
}

/// Segments (split at `/` only) that are a literal `.` or `..` followed by `;` and anything up
/// to the next `/`, reduced to the dot segment, as Envoy 1.40 resolves them (observed: `/y/..;x/z`
/// reaches the app as `/z`, `/y/.;/z` as `/y/z`, `/y/..;x\z` as `/`; escaped dots such as
/// `.%2e;` and a `;` anywhere else are left alone); `None` when there is none.
fn dot_segment_params(path: &str) -> Option<String> {
    if !path.contains(".;") {
        return None;
    }
    let mut changed = false;
    let segments: Vec<&str> = path
        .split('/')
        .map(|s| match s.split_once(';') {
            Some((dots @ ("." | ".."), _)) => {
                changed = true;
                dots
            }
            _ => s,
        })
        .collect();
    changed.then(|| segments.join("/"))
}

/// Envoy's `maybeUnescapeSlashes`: `%2F`/`%2f` to `/` and `%5C`/`%5c` to `\`; `None` when
/// there is none.
fn unescape_slashes(path: &str) -> Option<String> {
    let lower = path.to_ascii_lowercase();
    if !lower.contains("%2f") && !lower.contains("%5c") {
        return None;
    }
    Some(
        path.replace("%2F", "/")
            .replace("%2f", "/")
            .replace("%5C", "\\")
            .replace("%5c", "\\"),
    )
}

/// Envoy's `PathUtil::mergeSlashes`: the non-empty segments joined by one `/`, keeping a
/// leading and a trailing slash; `None` when there is no `//`.
fn merge_slashes(path: &str) -> Option<String> {
    if !path.contains("//") {
        return None;
    }
    let prefix = if path.starts_with('/') { "/" } else { "" };
    let suffix = if path.ends_with('/') { "/" } else { "" };
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    Some(format!("{prefix}{}{suffix}", segments.join("/")))
}

#[cfg(test)]
mod observed;
#[cfg(test)]
mod tests;
