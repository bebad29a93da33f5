//! Creating and configuring the namespaces: whether this machine can (root, `ip`, `iptables`,
//! a namespace that can be made and whose nat table works), and the pod/node pair with its
//! veth link, addresses and the virtual-IP route.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};

use nix::sched::{CloneFlags, setns, unshare};

use super::{NODE_EXCLUDED_IP, NODE_IP, Node, POD_IP, Tools, VIRTUAL_IP_RANGE};
use crate::error::Error;

/// Where programs are looked up besides `PATH` (root's sbin directories are often not in it).
const SBIN: [&str; 4] = ["/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin"];

/// Whether transparent scenarios can run here, and with which programs; `Err` says why not
/// (checked once per process).
pub(crate) fn support() -> Result<Tools, String> {
    static SUPPORT: OnceLock<Result<Tools, String>> = OnceLock::new();
    SUPPORT.get_or_init(probe_support).clone()
}

fn probe_support() -> Result<Tools, String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("transparent scenarios need root (network namespaces and iptables)".into());
    }
    let tools = Tools {
        ip: find("ip").ok_or("the `ip` program (iproute2) is not installed")?,
        iptables: find("iptables").ok_or("the `iptables` program is not installed")?,
    };
    let t = tools.clone();
    std::thread::spawn(move || -> Result<(), String> {
        unshare(CloneFlags::CLONE_NEWNET)
            .map_err(|e| format!("cannot create a network namespace: {e}"))?;
        run(&t.iptables, &["-t", "nat", "-S"])
            .map_err(|e| format!("iptables does not work in a network namespace here: {e}"))
    })
    .join()
    .map_err(|_| "the namespace probe thread panicked".to_owned())??;
    Ok(tools)
}

/// `name` in `PATH` or the sbin directories.
fn find(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(SBIN.iter().map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Moves the calling thread into a new pod namespace linked to a new node namespace.
pub(super) fn enter_pod(tools: &Tools) -> Result<Node, Error> {
    let node = std::thread::spawn(|| -> io::Result<File> {
        unshare(CloneFlags::CLONE_NEWNET).map_err(io::Error::from)?;
        File::open("/proc/thread-self/ns/net")
    })
    .join()
    .map_err(|_| Error::Step("the node namespace thread panicked".into()))?
    .map_err(|e| Error::io("create the node network namespace", e))?;
    let node = Node { ns: Arc::new(node) };
    unshare(CloneFlags::CLONE_NEWNET)
        .map_err(|e| Error::io("create the pod network namespace", e.into()))?;
    let node_path = format!("/proc/{}/fd/{}", std::process::id(), node.ns.as_raw_fd());
    let pod_ip = format!("{POD_IP}/24");
    let node_ip = format!("{NODE_IP}/24");
    let node_excluded_ip = format!("{NODE_EXCLUDED_IP}/24");
    let ip = |args: &[&str]| {
        run(&tools.ip, args).map_err(|e| Error::Redirect(format!("pod network setup: {e}")))
    };
    ip(&["link", "set", "lo", "up"])?;
    ip(&["route", "add", VIRTUAL_IP_RANGE, "dev", "lo"])?;
    ip(&[
        "link", "add", "pod0", "type", "veth", "peer", "name", "node0", "netns", &node_path,
    ])?;
    ip(&["addr", "add", &pod_ip, "dev", "pod0"])?;
    ip(&["link", "set", "pod0", "up"])?;
    let ip_path = tools.ip.clone();
    let in_node = node
        .run(move || -> Result<(), String> {
            run(&ip_path, &["link", "set", "lo", "up"])?;
            run(&ip_path, &["addr", "add", &node_ip, "dev", "node0"])?;
            run(
                &ip_path,
                &["addr", "add", &node_excluded_ip, "dev", "node0"],
            )?;
            run(&ip_path, &["link", "set", "node0", "up"])
        })
        .map_err(|e| Error::io("enter the node network namespace", e))?;
    in_node.map_err(|e| Error::Redirect(format!("node network setup: {e}")))?;
    Ok(node)
}

/// Moves the calling thread into `ns`.
pub(super) fn enter(ns: &File) -> io::Result<()> {
    setns(ns, CloneFlags::CLONE_NEWNET).map_err(io::Error::from)
}

/// Runs a setup program to completion; its stderr is the error.
fn run(program: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{} {}` failed ({}): {}",
            program.display(),
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
