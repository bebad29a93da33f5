//! The local application behind the proxy: a TCP address or a unix socket
//! (`LocalServiceSocketPath`), dialed with the `local_connect_timeout` knob. The connection is
//! returned as its concrete stream type so callers stay generic over it.

use std::time::Duration;

use tokio::net::{TcpStream, UnixStream};

use crate::snapshot::LocalApp;

/// An open connection to the local application.
#[derive(Debug)]
pub(crate) enum AppConn {
    /// `LocalServiceAddress:LocalServicePort`.
    Tcp(TcpStream),
    /// `LocalServiceSocketPath`.
    Unix(UnixStream),
}

/// Why the local application could not be reached.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LocalConnectError {
    /// Refused, no such socket, permission denied...
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// No answer within `local_connect_timeout`.
    #[error("connect timed out after {0:?}")]
    Timeout(Duration),
}

/// Dials `app` within `limit`.
pub(crate) async fn connect(app: &LocalApp, limit: Duration) -> Result<AppConn, LocalConnectError> {
    let dial = async {
        Ok::<_, std::io::Error>(match app {
            LocalApp::Tcp(addr) => {
                let tcp = TcpStream::connect(addr).await?;
                let _ = tcp.set_nodelay(true);
                AppConn::Tcp(tcp)
            }
            LocalApp::Unix(path) => AppConn::Unix(UnixStream::connect(path).await?),
        })
    };
    match tokio::time::timeout(limit, dial).await {
        Ok(conn) => Ok(conn?),
        Err(_) => Err(LocalConnectError::Timeout(limit)),
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[tokio::test]
    async fn dials_a_unix_socket_and_reports_a_missing_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.sock");
        let l = tokio::net::UnixListener::bind(&path).unwrap();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            s.write_all(b"hi").await.unwrap();
        });
        let app = LocalApp::Unix(path);
        let Ok(AppConn::Unix(mut s)) = connect(&app, Duration::from_secs(2)).await else {
            panic!("unix connection expected");
        };
        let mut buf = [0u8; 2];
        s.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"hi");
        let missing = LocalApp::Unix(dir.path().join("nope.sock"));
        let err = connect(&missing, Duration::from_secs(2)).await.unwrap_err();
        assert!(
            matches!(&err, LocalConnectError::Io(e) if e.kind() == std::io::ErrorKind::NotFound),
            "{err}"
        );
    }
}
