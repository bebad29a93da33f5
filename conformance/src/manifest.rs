//! What a proxy declares about itself: name, version, command template, features, bounds and
//! extra `Proxy.Config` keys. From a TOML file (`--manifest`), from flags (`--proxy-cmd`,
//! `--features`, `--bound`), or built in for the bundled reference proxy.
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
//!
//! [proxy_config]      # merged into the sidecar registration's Proxy.Config
//! reauthorize_interval_ms = 1000
//!
//! [transparent]       # only for the `transparent` feature
//! uid = 5995          # the proxy runs as this user; the redirect rules exempt it
//! # the one-shot, privileged redirect step run in the pod before the proxy starts
//! # (default: this harness's own `redirect-traffic`; `consul connect redirect-traffic`
//! # works the same against the simulated agent)
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

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use agent_sim::xds::TlsMode;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::Error;
use crate::template;

/// Every feature a proxy can declare (the vocabulary of scenario `features`).
pub const FEATURES: &[&str] = scenarios::FEATURES;

/// The feature of a proxy configured over the agent's gRPC xDS port (Envoy).
pub const XDS_FEATURE: &str = "xds";

/// Names of the bounds a proxy can declare, in milliseconds.
pub const BOUNDS: [&str; 2] = ["reauthorize_ms", "max_lifetime_ms"];

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

/// xDS settings (feature `xds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Xds {
    /// How the sim's xDS server delivers the sidecar's leaf and roots (`inline` or `sds`).
    #[serde(default)]
    pub tls_mode: TlsMode,
    /// Envoy's admin listener as written into the bootstrap; port 0 picks a free port per
    /// scenario (so parallel scenarios never clash).
    #[serde(default = "default_admin_bind")]
    pub admin_bind: SocketAddr,
}

fn default_admin_bind() -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, 0))
}

impl Default for Xds {
    fn default() -> Self {
        Self {
            tls_mode: TlsMode::default(),
            admin_bind: default_admin_bind(),
        }
    }
}

/// Transparent-mode settings: the proxy's UID and the redirect command.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Transparent {
    /// The UID (and GID) the proxy runs as; the redirect rules exempt its traffic.
    #[serde(default = "default_uid")]
    pub uid: u32,
    /// The one-shot redirect step (a template; the agent's address and the token also come in
    /// `CONSUL_HTTP_ADDR` / `CONSUL_HTTP_TOKEN`).
    #[serde(default = "default_redirect")]
    pub redirect_command: String,
}

/// Consul on Kubernetes runs Envoy as 5995; so do we.
pub const DEFAULT_PROXY_UID: u32 = 5995;

/// The bundled redirect step.
pub const DEFAULT_REDIRECT_COMMAND: &str =
    "{exe} redirect-traffic -proxy-id {proxy_id} -proxy-uid {proxy_uid}";

fn default_uid() -> u32 {
    DEFAULT_PROXY_UID
}

fn default_redirect() -> String {
    DEFAULT_REDIRECT_COMMAND.into()
}

impl Default for Transparent {
    fn default() -> Self {
        Self {
            uid: DEFAULT_PROXY_UID,
            redirect_command: DEFAULT_REDIRECT_COMMAND.into(),
        }
    }
}

/// Bounds a proxy claims, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bounds {
    /// Open connections are re-authorized at least this often.
    #[serde(default)]
    pub reauthorize_ms: Option<u64>,
    /// Connections are closed at this age.
    #[serde(default)]
    pub max_lifetime_ms: Option<u64>,
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
        ];
        Self {
            name: "proxy-under-test".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
            command: REFERENCE_COMMAND.into(),
            // Everything but xDS: the reference proxy reads the HTTP API.
            features: FEATURES
                .iter()
                .filter(|f| **f != XDS_FEATURE)
                .map(|f| (*f).to_owned())
                .collect(),
            token_file_args: Some("-token-file {token_file}".into()),
            bounds: Bounds {
                reauthorize_ms: Some(300),
                max_lifetime_ms: None,
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
        let program = match words.as_slice() {
            [exe, sub, ..] if exe == "{exe}" => Some(sub),
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

    /// `--proxy-image IMAGE`: the proxy runs from this image. The bundled reference proxy's
    /// command becomes its path inside the reference image.
    pub fn set_image(&mut self, image: &str) -> Result<(), Error> {
        crate::container::ImageRef::parse(image)?;
        if self.command == REFERENCE_COMMAND {
            self.command = REFERENCE_IMAGE_COMMAND.into();
        }
        self.image = Some(image.to_owned());
        Ok(())
    }

    /// The image to run the proxy from, parsed.
    pub fn image_ref(&self) -> Result<Option<crate::container::ImageRef>, Error> {
        self.image
            .as_deref()
            .map(crate::container::ImageRef::parse)
            .transpose()
    }

    /// `--features a,b` replaces the declared features.
    pub fn set_features(&mut self, list: &str) -> Result<(), Error> {
        self.features = list
            .split(',')
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .map(str::to_owned)
            .collect();
        self.validate("--features")
    }

    /// Whether the proxy is configured over xDS (declares [`XDS_FEATURE`]).
    pub fn is_xds(&self) -> bool {
        self.features.iter().any(|f| f == XDS_FEATURE)
    }

    /// `--proxy-cmd` replaces the command: its program path is the working directory's.
    /// Checked by [`Manifest::validate`] once every flag is applied.
    pub fn set_command(&mut self, command: &str) {
        self.command = command.to_owned();
        self.base_dir = None;
    }

    /// `--xds-tls-mode inline|sds` replaces the manifest's `xds.tls_mode`.
    pub fn set_xds_tls_mode(&mut self, mode: &str) -> Result<(), Error> {
        self.xds.tls_mode = mode.parse().map_err(|message| Error::Manifest {
            origin: "--xds-tls-mode".into(),
            message,
        })?;
        Ok(())
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

    /// `--bound name=ms` sets one bound.
    pub fn set_bound(&mut self, spec: &str) -> Result<(), Error> {
        let bad = |message: String| Error::Manifest {
            origin: "--bound".into(),
            message,
        };
        let (name, value) = spec
            .split_once('=')
            .ok_or_else(|| bad(format!("expected name=milliseconds, got {spec:?}")))?;
        let ms: u64 = value
            .trim()
            .trim_end_matches("ms")
            .parse()
            .map_err(|_| bad(format!("{name}: {value:?} is not a number of milliseconds")))?;
        match name.trim() {
            "reauthorize_ms" => self.bounds.reauthorize_ms = Some(ms),
            "max_lifetime_ms" => self.bounds.max_lifetime_ms = Some(ms),
            other => {
                return Err(bad(format!(
                    "unknown bound {other:?}; known: {}",
                    BOUNDS.join(", ")
                )));
            }
        }
        Ok(())
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
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v)))
        .collect()
    }

    /// Checks every field (after flags are applied); errors name `origin`.
    pub fn validate(&self, origin: &str) -> Result<(), Error> {
        self.validate_except_xds(origin)?;
        if self.is_xds() {
            return Ok(());
        }
        for (field, t) in [
            ("command", Some(self.command.clone())),
            (
                "token_file_args",
                self.token_file_args.as_ref().map(|a| format!("x {a}")),
            ),
        ] {
            let Some(t) = t else { continue };
            let used = template::xds_placeholders_used(&t).map_err(|e| Error::Manifest {
                origin: origin.to_owned(),
                message: format!("{field}: {e}"),
            })?;
            if let Some(p) = used.first() {
                return Err(Error::Manifest {
                    origin: origin.to_owned(),
                    message: format!(
                        "{field}: {{{p}}} is only set for a proxy configured over xDS (declare \
                         the `{XDS_FEATURE}` feature)"
                    ),
                });
            }
        }
        Ok(())
    }

    fn validate_except_xds(&self, origin: &str) -> Result<(), Error> {
        let bad = |message: String| Error::Manifest {
            origin: origin.to_owned(),
            message,
        };
        if self.name.trim().is_empty() {
            return Err(bad("name: must not be empty".into()));
        }
        template::check(&self.command).map_err(|e| bad(format!("command: {e}")))?;
        if let Some(image) = &self.image {
            crate::container::ImageRef::parse(image).map_err(|e| bad(format!("image: {e}")))?;
        }
        if let Some(a) = &self.token_file_args {
            template::check(&format!("x {a}")).map_err(|e| bad(format!("token_file_args: {e}")))?;
        }
        template::check(&self.transparent.redirect_command)
            .map_err(|e| bad(format!("transparent.redirect_command: {e}")))?;
        if self.transparent.uid == 0 {
            return Err(bad(
                "transparent.uid: the proxy must not run as root (its traffic would be exempt \
                 only by accident, and the proxy must stay unprivileged)"
                    .into(),
            ));
        }
        for f in &self.features {
            if !FEATURES.contains(&f.as_str()) {
                return Err(bad(format!(
                    "features: unknown feature {f:?}; known: {}",
                    FEATURES.join(", ")
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
