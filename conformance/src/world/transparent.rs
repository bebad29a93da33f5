//! The transparent-mode part of a world: the node side (where instances and the outside server
//! live), the proxy's UID (the scenario directory and token file become its own, so an
//! unprivileged proxy can read them), the outbound listener, and what the pod's kernel
//! shows about connections captured into it.

use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::fs::{PermissionsExt, chown};
use std::path::{Path, PathBuf};

use agent_sim::play::DEFAULT_OUTBOUND_PORT;
use scenarios::TransparentSpec;

use super::Excluded;
use super::apps::{self, App, AppKind};
use crate::error::Error;
use crate::netns::{NODE_IP, Node};

/// A world's pod.
#[derive(Debug)]
pub(crate) struct Pod {
    node: Node,
    uid: u32,
    outbound_port: u16,
    /// A plain TCP echo server on the node side that belongs to no service.
    pub(crate) outside: App,
    /// The servers the scenario's redirect exclusions name.
    pub(crate) excluded: Excluded,
}

impl Pod {
    /// Sets the pod's side of a world up; `dir` and `token_file` are handed to `uid`.
    pub(crate) async fn new(
        node: Node,
        spec: &TransparentSpec,
        uid: u32,
        dir: &Path,
        token_file: &Path,
    ) -> Result<Self, Error> {
        for p in [dir, token_file] {
            chown(p, Some(uid), Some(uid))
                .map_err(|e| Error::io(format!("hand {} to uid {uid}", p.display()), e))?;
        }
        let listener = node
            .listen(SocketAddr::from((NODE_IP, 0)))
            .map_err(|e| Error::io("bind the outside server", e))?;
        let outside = apps::on_listener(AppKind::Echo, listener)?;
        let excluded = Excluded::start(&node, &spec.exclude, uid).await?;
        Ok(Self {
            node,
            uid,
            outbound_port: spec.outbound_port.unwrap_or(DEFAULT_OUTBOUND_PORT),
            outside,
            excluded,
        })
    }

    /// The node namespace.
    pub(crate) fn node(&self) -> &Node {
        &self.node
    }

    /// The proxy's UID (and GID).
    pub(crate) fn uid(&self) -> u32 {
        self.uid
    }

    /// The transparent outbound listener, `127.0.0.1:<OutboundListenerPort>`.
    pub(crate) fn outbound_listener(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.outbound_port))
    }

    /// `exe` if the proxy's UID can run it where it is; else a copy in `dir` (a checkout under
    /// a private home directory is common: root can run it, uid 5995 cannot).
    pub(crate) fn runnable_exe(&self, exe: &Path, dir: &Path) -> Result<PathBuf, Error> {
        if others_can_run(exe) {
            return Ok(exe.to_path_buf());
        }
        let copy = dir.join(exe.file_name().unwrap_or_else(|| "proxy".as_ref()));
        if !copy.exists() {
            std::fs::copy(exe, &copy).map_err(|e| {
                Error::io(format!("copy {} for uid {}", exe.display(), self.uid), e)
            })?;
            chown(&copy, Some(self.uid), Some(self.uid)).map_err(|e| {
                Error::io(format!("hand {} to uid {}", copy.display(), self.uid), e)
            })?;
        }
        Ok(copy)
    }

    /// Established connections the outbound listener has accepted now, from the pod's TCP
    /// table (the calling thread must be in the pod, as a transparent scenario's thread is).
    pub(crate) fn captured_now(&self) -> Result<usize, Error> {
        let table = std::fs::read_to_string("/proc/thread-self/net/tcp")
            .map_err(|e| Error::io("read the pod's TCP table", e))?;
        Ok(count_established(&table, self.outbound_port))
    }
}

/// Whether any user may execute `exe`: every ancestor directory searchable by others, the
/// file readable and executable by others.
fn others_can_run(exe: &Path) -> bool {
    let mode = |p: &Path| std::fs::metadata(p).map(|m| m.permissions().mode()).ok();
    let file_ok = mode(exe).is_some_and(|m| m & 0o005 == 0o005);
    file_ok
        && exe
            .ancestors()
            .skip(1)
            .filter(|d| !d.as_os_str().is_empty())
            .all(|d| mode(d).is_some_and(|m| m & 0o001 != 0))
}

/// Rows of a `/proc/net/tcp` table in state ESTABLISHED (`01`) whose local port is `port`.
fn count_established(table: &str, port: u16) -> usize {
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local_port = fields
                .get(1)
                .and_then(|a| a.rsplit_once(':'))
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            local_port == Some(port) && fields.get(3) == Some(&"01")
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:3A99 00000000:0000 0A 00000000:00000000 00:00000000 00000000  5995        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:3A99 0100007F:D431 01 00000000:00000000 00:00000000 00000000  5995        0 2 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:D431 0100007F:3A99 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:3A99 0100007F:D432 06 00000000:00000000 03:00000000 00000000     0        0 0 3 0000000000000000
";

    #[test]
    fn private_directories_make_a_binary_unrunnable_for_others() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("bin");
        std::fs::write(&exe, b"#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(!others_can_run(&exe), "a 0700 directory hides the file");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(others_can_run(&exe), others_can_run(dir.path()));
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o750)).unwrap();
        assert!(!others_can_run(&exe));
    }

    #[test]
    fn counts_established_rows_on_the_local_port_only() {
        // 0x3A99 = 15001: the listener (0A), one accepted connection (01), a TIME_WAIT (06);
        // row 2 is the client's end (local port 0xD431).
        assert_eq!(count_established(TABLE, 15001), 1);
        assert_eq!(count_established(TABLE, 0xD431), 1);
        assert_eq!(count_established(TABLE, 80), 0);
        assert_eq!(count_established("", 15001), 0);
    }
}
