//! The flags an image configuration turns into (no Docker needed; `tests/container.rs` starts
//! the image where a daemon runs).

use super::*;

#[test]
fn flags_listen_on_all_addresses_of_the_host_network() {
    let img = AgentSimImage::new()
        .unwrap()
        .with_http_port(18500)
        .with_grpc_port(Some(18502));
    assert_eq!(
        img.flags(),
        [
            "--listen",
            "0.0.0.0:18500",
            "--grpc-listen",
            "0.0.0.0:18502"
        ]
    );
    assert_eq!(img.http_addr().to_string(), "127.0.0.1:18500");
    assert_eq!(img.grpc_addr().unwrap().to_string(), "127.0.0.1:18502");
}

#[test]
fn acl_preload_and_extra_flags() {
    let img = AgentSimImage::new()
        .unwrap()
        .with_http_port(1)
        .with_grpc_port(None)
        .with_acl("root")
        .with_preload(Path::new("/tmp/p.hcl"))
        .unwrap()
        .with_args(["--datacenter", "dc2"]);
    assert_eq!(
        img.flags(),
        [
            "--listen",
            "0.0.0.0:1",
            "--grpc-listen",
            "off",
            "--acl",
            "--default-policy",
            "deny",
            "--management-token",
            "root",
            "--preload",
            PRELOAD_PATH,
            "--datacenter",
            "dc2"
        ]
    );
    let mounts: Vec<_> = img.mounts().into_iter().collect();
    assert_eq!(mounts.len(), 1);
    assert_eq!(mounts[0].target(), Some(PRELOAD_PATH));
    assert_eq!(img.grpc_addr(), None);
}

#[test]
fn picked_ports_differ() {
    let img = AgentSimImage::new().unwrap();
    assert_ne!(img.http_addr().port(), 0);
    assert_ne!(Some(img.http_addr()), img.grpc_addr());
    assert_eq!(img.ready_conditions().len(), 1);
}
