//! The seam of the `sabotage` build: `crate::seam` is this module, the same items as the default
//! build's no-op `src/seam.rs`, here applying the [`Sabotages`] chosen with `--sabotage NAME`.
//! The items are defined by job in the sibling modules (`hooks`, `agent`, `authz`, `connection`,
//! `cli`, `transparent`); this only names them as the core sees them.

pub use super::Sabotages as HookSet;
pub(crate) use super::agent::ClientHooks;
pub(crate) use super::authz::AuthzHooks;
pub(crate) use super::connection::{OpenConnection, PerConnection};
pub use super::hooks::Hooks;
