//! What a proxy declares about itself: name, version, command template, features, bounds and
//! extra `Proxy.Config` keys. From a TOML file (`--manifest`), from flags (`--proxy-cmd`,
//! `--features`, `--bound`), or built in for the bundled reference proxy.
//!
//! This file owns the [`Manifest`] itself, reading it and what the runner asks of it; its
//! sections (`[xds]`, `[transparent]`, `[bounds]`) are in `manifest/sections.rs`, the flags
//! that change it in `manifest/flags.rs`, and its validation in `manifest/validate.rs`.
//!
//! ```toml
//! name = "my-proxy"
//! version = "1.4.0"
//! command = "my-proxy -proxy-id {proxy_id}"
//! features = ["l4", "l7-http", "upstreams"]
//!
//! # appended when a scenario delivers the token as a file (default: set
//! # CONSUL_HTTP_TOKEN_FILE instead)
//! token_file_args = "-token-file {token_file}"
//!
//! [bounds]            # milliseconds
//! reauthorize_ms = 1000
//! max_lifetime_ms = 600000
//! query_poll_ms = 30000   # prepared-query upstreams re-executed this often (`query-poll`)
//!
//! [proxy_config]      # merged into the sidecar registration's Proxy.Config
//! reauthorize_interval_ms = 1000
//!
//! [transparent]       # only for the `transparent` feature
//! uid = 5995          # the proxy runs as this user; the redirect rules exempt it
//! # the one-shot, privileged redirect step run in the pod before the proxy starts
//! # (default: this harness's own `redirect-traffic`; `consul connect redirect-traffic`
//! # works the same against the simulated agent); a scenario's exclusions are appended as
//! # `-exclude-inbound-port N`, `-exclude-outbound-port N`, `-exclude-outbound-cidr A/32`,
//! # `-exclude-uid N`
//! redirect_command = "{exe} redirect-traffic -proxy-id {proxy_id} -proxy-uid {proxy_uid}"
//!
//! # run the proxy from this local container image (host network; the scenario's files
//! # mounted at the same paths); `command`'s program is then the path inside the image
//! image = "my-proxy:1.4.0"
//!
//! [xds]               # only for the `xds` feature (a proxy configured over gRPC, e.g. Envoy)
//! tls_mode = "sds"    # how the sim's xDS server sends leaf and roots: "inline" or "sds"
//! admin_bind = "127.0.0.1:0"   # Envoy's admin listener in the bootstrap; port 0 = a free one
//! ```
//!
//! A relative program path in `command` (a first word containing `/`, like
//! `../../.tools/envoy-1.40.0/envoy/_bin/envoy`) is resolved against the manifest file's
//! directory, so a manifest works from any working directory.

mod flags;
mod sections;
mod validate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};

pub use self::sections::{Bounds, DEFAULT_PROXY_UID, DEFAULT_REDIRECT_COMMAND, Transparent, Xds};
use crate::error::Error;
use crate::template;

/// Every feature a proxy can declare (the vocabulary of scenario `features`).
pub const FEATURES: &[&str] = scenarios::FEATURES;

/// The feature of a proxy configured over the agent's gRPC xDS port (Envoy).
pub const XDS_FEATURE: &str = "xds";

/// Features the reference proxy does not implement yet, so does not declare (none: `l7-traffic`,
/// outbound L7 routing per the discovery chain, issue 19, is implemented by proxy-under-test).
pub const REFERENCE_PENDING: &[&str] = &[];

/// Names of the bounds a proxy can declare, in milliseconds.
pub const BOUNDS: [&str; 3] = ["reauthorize_ms", "max_lifetime_ms", "query_poll_ms"];

/// Command of the bundled reference proxy (`{exe}` is the conformance binary itself).
pub const REFERENCE_COMMAND: &str = "{exe} reference-proxy -proxy-id {proxy_id}";

/// Command of the reference proxy in its image (`scripts/build-images.sh`), used by
/// `--proxy-image` without `--manifest` or `--proxy-cmd`.
pub const REFERENCE_IMAGE_COMMAND: &str = "/usr/local/bin/proxy-under-test -proxy-id {proxy_id}";

/// What a proxy declares.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Proxy name for the report.
    pub name: String,
    /// Proxy version, if known.
    #[serde(default)]
    pub version: Option<String>,
    /// Command template (see [`template`]).
    pub command: String,
    /// Declared features.
    #[serde(default)]
    pub features: Vec<String>,
    /// Arguments appended to the command when a scenario delivers the token as a file; when
    /// absent, the harness sets `CONSUL_HTTP_TOKEN_FILE` instead.
    #[serde(default)]
    pub token_file_args: Option<String>,
    /// Declared bounds.
    #[serde(default)]
    pub bounds: Bounds,
    /// Extra keys for the sidecar's `Proxy.Config`.
    #[serde(default)]
    pub proxy_config: BTreeMap<String, Value>,
    /// How transparent scenarios run the proxy and the redirect step.
    #[serde(default)]
    pub transparent: Transparent,
    /// How an xDS proxy (feature `xds`) is served and bootstrapped.
    #[serde(default)]
    pub xds: Xds,
    /// A local container image the proxy runs from (`--proxy-image`); `None`: a process.
    #[serde(default)]
    pub image: Option<String>,
    /// The manifest file's directory: a relative program path in `command` is resolved
    /// against it (`None` for flags and the built-in manifest: the working directory).
    #[serde(skip)]
    pub base_dir: Option<PathBuf>,
}

// === impl Manifest ===

impl Manifest {
    /// The bundled reference proxy: every feature, a 300 ms re-authorization interval, and
    /// small drain/dial timeouts so scenarios stay fast.
    pub fn reference() -> Self {
        let knobs = [
            ("reauthorize_interval_ms", json!(300)),
            ("drain_timeout_ms", json!(200)),
            ("upstream_connect_timeout_ms", json!(2000)),
            // Prepared-query upstreams re-polled every 500 ms (declared as `query_poll_ms`).
            ("prepared_query_poll_interval_ms", json!(500)),
        ];
        Self {
            name: "proxy-under-test".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
            command: REFERENCE_COMMAND.into(),
            // Everything but xDS (the reference proxy reads the HTTP API) and what it does not
            // implement yet.
            features: FEATURES
                .iter()
                .filter(|f| **f != XDS_FEATURE && !REFERENCE_PENDING.contains(*f))
                .map(|f| (*f).to_owned())
                .collect(),
            token_file_args: Some("-token-file {token_file}".into()),
            bounds: Bounds {
                reauthorize_ms: Some(300),
                max_lifetime_ms: None,
                query_poll_ms: Some(500),
            },
            proxy_config: knobs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
            transparent: Transparent::default(),
            xds: Xds::default(),
            image: None,
            base_dir: None,
        }
    }

    /// Parses a manifest file's text; errors name the file (and line, for TOML errors).
    pub fn parse(path: &Path, text: &str) -> Result<Self, Error> {
        let origin = path.display().to_string();
        let mut manifest: Self = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| {
                text.as_bytes()[..s.start.min(text.len())]
                    .iter()
                    .filter(|b| **b == b'\n')
                    .count()
                    + 1
            });
            Error::Manifest {
                origin: match line {
                    Some(l) => format!("{origin}:{l}"),
                    None => origin.clone(),
                },
                message: e.message().to_owned(),
            }
        })?;
        manifest.base_dir = path
            .parent()
            .map(|d| {
                if d.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    d
                }
            })
            // Absolute (no filesystem access), so the proxy-command artifact reads well.
            .map(|d| std::path::absolute(d).unwrap_or_else(|_| d.to_path_buf()));
        manifest.validate(&origin)?;
        Ok(manifest)
    }

    /// [`Manifest::parse`] for a file's raw bytes: text that is not UTF-8 is refused with the line
    /// of the first bad byte.
    pub fn parse_bytes(path: &Path, bytes: &[u8]) -> Result<Self, Error> {
        let text = std::str::from_utf8(bytes).map_err(|e| {
            let valid = e.valid_up_to();
            let line = bytes[..valid].iter().filter(|b| **b == b'\n').count() + 1;
            Error::Manifest {
                origin: format!("{}:{line}", path.display()),
                message: format!("not valid UTF-8 (byte offset {valid})"),
            }
        })?;
        Self::parse(path, text)
    }

    /// A manifest from flags only: the name is the program's file name.
    pub fn from_command(command: &str) -> Result<Self, Error> {
        let words = template::split(command).map_err(|message| Error::Template {
            template: command.to_owned(),
            message,
        })?;
        // The program's file name; with `{exe} reference-proxy ...` (the bundled proxy through
        // this binary) the subcommand names it better than a placeholder would.
        // An interpreter (`python3 my_proxy.py`, `node proxy.js`) is named by its script.
        const INTERPRETERS: [&str; 7] =
            ["python", "python3", "node", "ruby", "perl", "java", "deno"];
        let program = match words.as_slice() {
            [exe, sub, ..] if exe == "{exe}" => Some(sub),
            [first, rest @ ..] if INTERPRETERS.contains(&first.as_str()) => rest
                .iter()
                .find(|w| !w.starts_with('-') && !w.starts_with('{'))
                .or(Some(first)),
            [first, ..] => Some(first),
            [] => None,
        };
        let name = program
            .and_then(|w| Path::new(w).file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('{'))
            .unwrap_or_else(|| "proxy".into());
        let m = Self {
            name,
            version: None,
            command: command.to_owned(),
            features: Vec::new(),
            token_file_args: None,
            bounds: Bounds::default(),
            proxy_config: BTreeMap::new(),
            transparent: Transparent::default(),
            xds: Xds::default(),
            image: None,
            base_dir: None,
        };
        // `{bootstrap}` etc. may still be allowed by `--features xds` (checked by the caller).
        m.validate_except_xds("--proxy-cmd")?;
        Ok(m)
    }

    /// The image to run the proxy from, parsed.
    pub fn image_ref(&self) -> Result<Option<crate::container::ImageRef>, Error> {
        self.image
            .as_deref()
            .map(crate::container::ImageRef::parse)
            .transpose()
    }

    /// Whether the proxy is configured over xDS (declares [`XDS_FEATURE`]).
    pub fn is_xds(&self) -> bool {
        self.features.iter().any(|f| f == XDS_FEATURE)
    }

    /// A relative program path (containing `/`) resolved against the manifest's directory;
    /// bare names (looked up on `PATH`) and absolute paths are left alone.
    pub fn resolve_program(&self, argv: &mut [String]) {
        // In an image, the program is a path inside the image.
        let (None, Some(base), Some(program)) = (&self.image, &self.base_dir, argv.first_mut())
        else {
            return;
        };
        let path = Path::new(program.as_str());
        if program.contains('/') && path.is_relative() {
            *program = base.join(path).display().to_string();
        }
    }

    /// Whether every feature of `needed` is declared; `Err` lists the missing ones.
    pub fn supports(&self, needed: &[String]) -> Result<(), Vec<String>> {
        let missing: Vec<String> = needed
            .iter()
            .filter(|f| !self.features.contains(f))
            .cloned()
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(missing)
        }
    }

    /// The bounds as the report lists them.
    pub fn bounds_map(&self) -> BTreeMap<String, u64> {
        let b = self.bounds;
        [
            ("reauthorize_ms", b.reauthorize_ms),
            ("max_lifetime_ms", b.max_lifetime_ms),
            ("query_poll_ms", b.query_poll_ms),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v)))
        .collect()
    }
}

#[cfg(test)]
mod tests;
