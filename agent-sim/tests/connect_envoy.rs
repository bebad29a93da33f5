//! `agent-sim connect envoy -bootstrap` run as a binary against an in-process agent-sim with
//! ACLs: `-proxy-id` and `-sidecar-for`, the token from a flag, a file and the environment,
//! and Consul's errors for an unknown proxy or a missing proxy ID.

use std::net::SocketAddr;
use std::process::Stdio;

use agent_sim::acl::DefaultPolicy;
use agent_sim::{AgentSim, Listening};
use serde_json::{Value, json};

const MGMT: &str = "11111111-0000-0000-0000-000000000001";

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", self.stdout, self.stderr))
    }
}

/// Runs the binary with a clean Consul environment plus `env`.
async fn connect_envoy(args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_agent-sim"));
    cmd.arg("connect").arg("envoy").args(args);
    for k in [
        "CONSUL_HTTP_ADDR",
        "CONSUL_GRPC_ADDR",
        "CONSUL_HTTP_TOKEN",
        "CONSUL_HTTP_TOKEN_FILE",
        "CONNECT_PROXY_ID",
        "CONNECT_SIDECAR_FOR",
    ] {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .await
        .expect("agent-sim runs");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A sim with ACLs (default deny), `web` with its sidecar, and a token that may write `web`.
async fn sim() -> (Listening, String) {
    let sim = AgentSim::builder()
        .bind("127.0.0.1:0".parse().expect("addr"))
        .acls(MGMT, DefaultPolicy::Deny)
        .cluster_id("11111111-2222-3333-4444-555555555555")
        .run_checks(false)
        .start()
        .await
        .expect("sim starts");
    sim.control()
        .register(&json!({
            "Name": "web",
            "ID": "web",
            "Port": 8080,
            "Connect": {"SidecarService": {}}
        }))
        .expect("register web");
    let token = sim
        .control()
        .create_token(
            "service \"web\" { policy = \"write\" }\nservice_prefix \"\" { policy = \"read\" }\nagent_prefix \"\" { policy = \"read\" }",
            "web's proxy",
        )
        .expect("token")
        .secret_id;
    (sim, token)
}

fn agent_endpoint(v: &Value) -> SocketAddr {
    let a = &v["static_resources"]["clusters"][0]["loadAssignment"]["endpoints"][0]["lbEndpoints"]
        [0]["endpoint"]["address"]["socket_address"];
    format!(
        "{}:{}",
        a["address"].as_str().expect("address"),
        a["port_value"]
    )
    .parse()
    .expect("socket address")
}

fn sent_token(v: &Value) -> &str {
    v["dynamic_resources"]["ads_config"]["grpc_services"]["initial_metadata"][0]["value"]
        .as_str()
        .expect("token value")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_id_with_token_flag() {
    let (sim, token) = sim().await;
    let http = sim.addr().to_string();
    let out = connect_envoy(
        &[
            "-bootstrap",
            "-proxy-id",
            "web-sidecar-proxy",
            "-http-addr",
            &http,
            "-grpc-addr",
            "127.0.0.1:18502",
            "-token",
            &token,
            "-admin-bind",
            "localhost:19005",
        ],
        &[],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = out.json();
    assert_eq!(v["node"]["id"], "web-sidecar-proxy");
    assert_eq!(v["node"]["cluster"], "web");
    assert_eq!(sent_token(&v), token);
    assert_eq!(agent_endpoint(&v), "127.0.0.1:18502".parse().expect("addr"));
    assert_eq!(
        v["admin"]["address"]["socket_address"]["address"],
        "127.0.0.1"
    );
    assert_eq!(v["admin"]["address"]["socket_address"]["port_value"], 19005);
    let dc = v["stats_config"]["stats_tags"]
        .as_array()
        .expect("tags")
        .iter()
        .find(|t| t["tag_name"] == "consul.source.datacenter")
        .cloned();
    assert_eq!(
        dc,
        Some(json!({"tag_name": "consul.source.datacenter", "fixed_value": "dc1"}))
    );
    // The registration was read with the token.
    let reads = sim
        .control()
        .request_log()
        .into_iter()
        .filter(|e| format!("{e:?}").contains("/v1/agent/service/web-sidecar-proxy"))
        .count();
    assert!(reads >= 1, "{:?}", sim.control().request_log());
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sidecar_for_with_env_and_token_file() {
    let (sim, token) = sim().await;
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("token");
    std::fs::write(&file, format!("{token}\n")).expect("write token");
    let http = format!("http://{}", sim.addr());
    let file = file.display().to_string();
    // A wrong CONSUL_HTTP_TOKEN loses to the token file (Consul's api.NewClient).
    let out = connect_envoy(
        &["--bootstrap", "--sidecar-for=web"],
        &[
            ("CONSUL_HTTP_ADDR", http.as_str()),
            ("CONSUL_GRPC_ADDR", "127.0.0.1:18503"),
            ("CONSUL_HTTP_TOKEN", "not-a-token"),
            ("CONSUL_HTTP_TOKEN_FILE", file.as_str()),
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = out.json();
    assert_eq!(v["node"]["id"], "web-sidecar-proxy");
    assert_eq!(v["node"]["cluster"], "web");
    assert_eq!(sent_token(&v), token);
    assert_eq!(agent_endpoint(&v), "127.0.0.1:18503".parse().expect("addr"));

    let out = connect_envoy(
        &["-bootstrap", "-sidecar-for", "nothing"],
        &[
            ("CONSUL_HTTP_ADDR", http.as_str()),
            ("CONSUL_HTTP_TOKEN", token.as_str()),
        ],
    )
    .await;
    assert_eq!(out.code, 1);
    assert_eq!(out.stderr.trim(), "No sidecar proxy registered for nothing");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consuls_errors() {
    let (sim, token) = sim().await;
    let http = sim.addr().to_string();
    let base = [
        "-bootstrap",
        "-http-addr",
        http.as_str(),
        "-grpc-addr",
        "127.0.0.1:8502",
    ];

    let mut args = base.to_vec();
    args.extend(["-proxy-id", "no-such-proxy", "-token", token.as_str()]);
    let out = connect_envoy(&args, &[]).await;
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stderr.starts_with(
            "failed fetch proxy config from local agent: Unexpected response code: 404"
        ),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty());

    let out = connect_envoy(&base, &[]).await;
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr.trim(),
        "No proxy ID specified. One of -proxy-id, -sidecar-for, or -gateway is required"
    );

    // Without a token the default-deny agent refuses the read.
    let mut args = base.to_vec();
    args.extend(["-proxy-id", "web-sidecar-proxy"]);
    let out = connect_envoy(&args, &[]).await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("Unexpected response code: 403"),
        "{}",
        out.stderr
    );

    // Not a proxy.
    let mut args = base.to_vec();
    args.extend(["-proxy-id", "web", "-token", MGMT]);
    let out = connect_envoy(&args, &[]).await;
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr.trim(),
        "service is not a Connect proxy or gateway"
    );

    let mut args = base.to_vec();
    args.extend(["-proxy-id", "web-sidecar-proxy", "-admin-bind", "localhost"]);
    let out = connect_envoy(&args, &[]).await;
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr.trim(),
        "Invalid Consul HTTP address: address localhost: missing port in address"
    );

    let out = connect_envoy(&["-bogus"], &[]).await;
    assert_eq!(out.code, 1);
    assert_eq!(out.stderr.trim(), "flag provided but not defined: -bogus");
    sim.shutdown().await;

    // The agent is gone: a one-line error naming the request.
    let mut args = base.to_vec();
    args.extend(["-proxy-id", "web-sidecar-proxy"]);
    let out = connect_envoy(&args, &[]).await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("failed fetch proxy config from local agent: Get ")
            && out.stderr.lines().count() == 1,
        "{}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_bootstrap_execs_envoy_or_says_why_not() {
    let (sim, token) = sim().await;
    let http = sim.addr().to_string();
    // A stand-in "envoy" that prints its arguments and the config it was given.
    let dir = tempfile::tempdir().expect("tmp");
    let fake = dir.path().join("envoy");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho \"$@\"\nwhile [ \"$1\" != --config-path ]; do shift; done\ncat \"$2\"\n",
    )
    .expect("write fake envoy");
    let mut perms = std::fs::metadata(&fake).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&fake, perms).expect("chmod");
    let fake_s = fake.display().to_string();
    // Its own TMPDIR, which must stay empty: no bootstrap file outlives the exec.
    let tmp = tempfile::tempdir().expect("tmp");
    let tmp_s = tmp.path().display().to_string();
    let out = connect_envoy(
        &[
            "-proxy-id",
            "web-sidecar-proxy",
            "-http-addr",
            &http,
            "-grpc-addr",
            "127.0.0.1:8502",
            "-token",
            &token,
            "-envoy-binary",
            &fake_s,
            "--",
            "--drain-time-s",
            "1",
        ],
        &[("TMPDIR", &tmp_s)],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (argv, config) = out.stdout.split_once('\n').expect("two parts");
    assert_eq!(
        argv, "--disable-hot-restart --config-path /dev/fd/0 --drain-time-s 1",
        "the bootstrap comes on stdin"
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path()).expect("tmp").collect();
    assert!(
        left.is_empty(),
        "the bootstrap file was left behind: {left:?}"
    );
    let v: Value = serde_json::from_str(config).expect("config is the bootstrap");
    assert_eq!(v["node"]["id"], "web-sidecar-proxy");

    let out = connect_envoy(
        &[
            "-proxy-id",
            "web-sidecar-proxy",
            "-http-addr",
            &http,
            "-grpc-addr",
            "127.0.0.1:8502",
            "-token",
            &token,
            "-envoy-binary",
            "/nonexistent/envoy",
        ],
        &[],
    )
    .await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("exec /nonexistent/envoy"),
        "{}",
        out.stderr
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_grpc_addr_falls_back_to_localhost_8502() {
    // agent-sim without a gRPC port reports no `xDS.Port` in /v1/agent/self, so the command
    // uses Consul's dev default, localhost:8502, resolved to an IP for the STATIC cluster.
    let (sim, token) = sim().await;
    let http = sim.addr().to_string();
    let out = connect_envoy(
        &[
            "-bootstrap",
            "-proxy-id",
            "web-sidecar-proxy",
            "-http-addr",
            &http,
            "-token",
            &token,
        ],
        &[],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        agent_endpoint(&out.json()),
        "127.0.0.1:8502".parse().expect("addr")
    );
    sim.shutdown().await;
}

/// `/v1/agent/self` reports `"xDS": {"Port": <gRPC port>}` as Consul does, so `connect envoy`
/// finds the port without `-grpc-addr`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_grpc_addr_uses_the_agents_xds_port() {
    let sim = AgentSim::builder()
        .bind("127.0.0.1:0".parse().expect("addr"))
        .grpc_bind("127.0.0.1:0".parse().expect("addr"))
        .run_checks(false)
        .start()
        .await
        .expect("sim starts");
    sim.control()
        .register(&json!({"Name": "web", "Port": 8080, "Connect": {"SidecarService": {}}}))
        .expect("register web");
    let http = sim.addr().to_string();
    let out = connect_envoy(
        &[
            "-bootstrap",
            "-proxy-id",
            "web-sidecar-proxy",
            "-http-addr",
            &http,
        ],
        &[],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(Some(agent_endpoint(&out.json())), sim.grpc_addr());
    sim.shutdown().await;
}
