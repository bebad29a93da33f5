//! Unix-socket listener files: mode, stale sockets replaced, other files refused, missing
//! directories, removal on close (never of a successor's socket).

use std::os::unix::fs::{FileTypeExt, PermissionsExt};

use super::*;

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn is_socket(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

#[tokio::test]
async fn binds_with_the_mode_and_removes_the_file_on_close() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("up.sock");
    let l = bind(&path, Some(0o600)).unwrap();
    assert!(is_socket(&path));
    assert_eq!(mode_of(&path), 0o600);
    drop(l);
    assert!(!path.exists(), "socket file removed on close");
    let l = bind(&path, Some(0o640)).unwrap();
    assert_eq!(mode_of(&path), 0o640);
    drop(l);
}

#[tokio::test]
async fn a_stale_socket_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("up.sock");
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(is_socket(&path), "left behind by a dead process");
    let l = bind(&path, Some(0o600)).unwrap();
    assert_eq!(mode_of(&path), 0o600);
    let conn = std::os::unix::net::UnixStream::connect(&path);
    assert!(conn.is_ok(), "the new socket listens: {conn:?}");
    drop(l);
}

#[tokio::test]
async fn files_and_directories_in_the_way_are_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    std::fs::write(&file, b"precious").unwrap();
    let err = bind(&file, None).unwrap_err();
    assert!(matches!(err, UnixBindError::NotASocket { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "{} exists and is not a socket; refusing to replace it",
            file.display()
        )
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"precious");
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let err = bind(&sub, None).unwrap_err();
    assert!(matches!(err, UnixBindError::NotASocket { .. }), "{err}");
    assert!(sub.is_dir());
}

#[tokio::test]
async fn a_missing_directory_is_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing").join("up.sock");
    let err = bind(&path, None).unwrap_err();
    assert!(matches!(err, UnixBindError::MissingParent { .. }), "{err}");
    assert!(!dir.path().join("missing").exists());
}

#[tokio::test]
async fn a_closing_listener_leaves_its_successors_socket() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("up.sock");
    let old = bind(&path, Some(0o600)).unwrap();
    let new = bind(&path, Some(0o660)).unwrap();
    drop(old);
    assert!(is_socket(&path), "the successor's socket survives");
    assert_eq!(mode_of(&path), 0o660);
    drop(new);
    assert!(!path.exists());
}

#[tokio::test]
async fn a_path_too_long_is_a_bind_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x".repeat(120));
    let err = bind(&path, None).unwrap_err();
    assert!(matches!(err, UnixBindError::Bind { .. }), "{err}");
}
