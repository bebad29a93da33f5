//! Upstream listeners on unix sockets (`LocalBindSocketPath`): the socket file is created at
//! bind (replacing a stale socket, never a regular file or directory; the parent directory must
//! exist), given `LocalBindSocketMode` right after, and removed when the listener closes
//! (upstream removed, shutdown). Accepted connections take the same path as TCP ones
//! ([`outbound::handle`]).

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::net::UnixListener;

use super::{Shared, outbound};
use crate::snapshot::Bind;

/// Why a unix-socket upstream listener could not be created.
#[derive(Debug, thiserror::Error)]
pub enum UnixBindError {
    /// Something other than a socket is in the way; it is left alone.
    #[error("{path} exists and is not a socket; refusing to replace it")]
    NotASocket {
        /// The socket path.
        path: PathBuf,
    },
    /// The socket's directory does not exist (it is not created).
    #[error("the directory of {path} does not exist")]
    MissingParent {
        /// The socket path.
        path: PathBuf,
    },
    /// Inspecting or removing a stale socket failed.
    #[error("cannot replace the stale socket {path}: {source}")]
    Stale {
        /// The socket path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// `bind(2)` failed (path too long, permission denied...).
    #[error("cannot bind {path}: {source}")]
    Bind {
        /// The socket path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Setting the mode failed (the socket was removed again).
    #[error("cannot set mode {mode:04o} on {path}: {source}")]
    Mode {
        /// The socket path.
        path: PathBuf,
        /// The requested mode.
        mode: u32,
        /// The OS error.
        source: std::io::Error,
    },
}

/// The socket file a listener created; removed on drop unless it was replaced meanwhile (same
/// device and inode only), so a closing listener never deletes its successor's socket.
#[derive(Debug)]
struct SocketFile {
    path: PathBuf,
    id: Option<(u64, u64)>,
}

impl SocketFile {
    fn new(path: &Path) -> Self {
        let id = std::fs::symlink_metadata(path)
            .ok()
            .map(|m| (m.dev(), m.ino()));
        Self {
            path: path.to_owned(),
            id,
        }
    }
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        let current = std::fs::symlink_metadata(&self.path)
            .ok()
            .map(|m| (m.dev(), m.ino()));
        if current.is_some() && current == self.id {
            match std::fs::remove_file(&self.path) {
                Ok(()) => tracing::debug!(path = %self.path.display(), "socket file removed"),
                Err(e) => {
                    tracing::warn!(path = %self.path.display(), error = %e, "cannot remove socket file");
                }
            }
        }
    }
}

/// A bound unix-socket upstream listener owning its socket file.
#[derive(Debug)]
pub(crate) struct UnixUpstream {
    listener: UnixListener,
    _file: SocketFile,
}

/// Removes what is at `path` if it is a (stale) socket; refuses anything else.
fn clear_stale(path: &Path) -> Result<(), UnixBindError> {
    let stale = |source| UnixBindError::Stale {
        path: path.to_owned(),
        source,
    };
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(stale(e)),
        Ok(m) if m.file_type().is_socket() => {
            tracing::info!(path = %path.display(), "removing stale socket file");
            match std::fs::remove_file(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(stale(e)),
                _ => Ok(()),
            }
        }
        Ok(_) => Err(UnixBindError::NotASocket {
            path: path.to_owned(),
        }),
    }
}

/// Binds a listener at `path` and gives the socket `mode` (needs a tokio runtime).
pub(crate) fn bind(path: &Path, mode: Option<u32>) -> Result<UnixUpstream, UnixBindError> {
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(UnixBindError::MissingParent {
            path: path.to_owned(),
        });
    }
    clear_stale(path)?;
    let listener = UnixListener::bind(path).map_err(|source| UnixBindError::Bind {
        path: path.to_owned(),
        source,
    })?;
    let file = SocketFile::new(path);
    if let Some(mode) = mode {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(
            |source| UnixBindError::Mode {
                path: path.to_owned(),
                mode,
                source,
            },
        )?;
    }
    Ok(UnixUpstream {
        listener,
        _file: file,
    })
}

/// Accepts until stop; each connection goes through the upstream dial path. Dropping the
/// listener at the end removes its socket file.
pub(crate) async fn accept_loop(
    listener: UnixUpstream,
    name: String,
    bind: Bind,
    shared: Arc<Shared>,
) {
    let what = format!("upstream {name}");
    let accept = || listener.listener.accept();
    super::accept::until_stop(&shared, &what, accept, |(stream, _)| {
        tokio::spawn(outbound::handle(
            stream,
            name.clone(),
            bind.clone(),
            shared.clone(),
            None,
        ));
    })
    .await;
    tracing::info!(upstream = %name, %bind, "upstream socket listener closed");
}

#[cfg(test)]
mod tests;
