//! The flags that change a manifest after it is read: `--proxy-image`, `--features`,
//! `--proxy-cmd`, `--xds-tls-mode` and `--bound`.

use super::{BOUNDS, Manifest, REFERENCE_COMMAND, REFERENCE_IMAGE_COMMAND};
use crate::error::Error;

impl Manifest {
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
            "query_poll_ms" => self.bounds.query_poll_ms = Some(ms),
            other => {
                return Err(bad(format!(
                    "unknown bound {other:?}; known: {}",
                    BOUNDS.join(", ")
                )));
            }
        }
        Ok(())
    }
}
