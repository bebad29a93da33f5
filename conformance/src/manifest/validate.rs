//! Validation of a manifest (read from a file, built from flags, or changed by them): a name,
//! command templates that parse, known features, an image reference that parses, an unprivileged
//! UID, and xDS placeholders only for a proxy that declares `xds`.

use super::{FEATURES, Manifest, XDS_FEATURE};
use crate::error::Error;
use crate::template;

impl Manifest {
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

    pub(super) fn validate_except_xds(&self, origin: &str) -> Result<(), Error> {
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
