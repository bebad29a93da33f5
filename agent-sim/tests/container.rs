//! agent-sim's image started through its testcontainers `Image` (feature `testcontainers`) and
//! driven with an HTTP client: ACLs with the management token, a preload file, the gRPC port
//! listening, and the container removed afterwards.
//!
//! Image: `agent-sim:latest` (`scripts/build-images.sh agent-sim`). Where no Docker daemon
//! answers or the image is missing, the trial is ignored with the reason, never passed, unless
//! `CONFORMANCE_REQUIRE_DOCKER=1` (set by `.ci/run`) makes that a failure.

use std::time::Duration;

use agent_sim::container::{AgentSimImage, IMAGE_NAME, IMAGE_TAG};
use libtest_mimic::{Arguments, Failed, Trial};
use testcontainers::bollard::Docker;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"))
}

/// Why the image cannot run here, if it cannot.
async fn unavailable() -> Option<String> {
    let d = match Docker::connect_with_defaults() {
        Ok(d) => d,
        Err(e) => return Some(format!("no Docker client: {e}")),
    };
    match tokio::time::timeout(Duration::from_secs(5), d.ping()).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Some(format!("no Docker daemon answers: {e}")),
        Err(_) => return Some("the Docker daemon did not answer within 5 s".into()),
    }
    let image = format!("{IMAGE_NAME}:{IMAGE_TAG}");
    match tokio::time::timeout(Duration::from_secs(20), d.inspect_image(&image)).await {
        Ok(Ok(_)) => None,
        _ => Some(format!(
            "image {image} is not available (scripts/build-images.sh agent-sim)"
        )),
    }
}

async fn exists(id: &str) -> Result<bool, Failed> {
    let d = Docker::connect_with_defaults().map_err(|e| e.to_string())?;
    Ok(d.inspect_container(id, None).await.is_ok())
}

async fn drive() -> Result<(), Failed> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let preload = dir.path().join("preload.hcl");
    std::fs::write(
        &preload,
        r#"services = [{ Name = "db", Port = 9090, Connect = { SidecarService = {} } }]"#,
    )
    .map_err(|e| e.to_string())?;
    // The image's user (65532) reads it through the bind mount.
    {
        use std::os::unix::fs::PermissionsExt as _;
        let open = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(dir.path(), open).map_err(|e| e.to_string())?;
        let file = std::fs::Permissions::from_mode(0o644);
        std::fs::set_permissions(&preload, file).map_err(|e| e.to_string())?;
    }
    let sim = AgentSimImage::new()
        .map_err(|e| e.to_string())?
        .with_acl("root-secret")
        .with_preload(&preload)
        .map_err(|e| e.to_string())?
        .start()
        .await
        .map_err(|e| format!("[{}] {e}", e.kind()))?;
    let id = sim.container().id().to_owned();
    let base = format!("http://{}", sim.http_addr());
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| e.to_string())?;

    // Default policy deny: no token, no services.
    let anon = client
        .get(format!("{base}/v1/agent/services"))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let anon_body = anon.text().await.map_err(|e| e.to_string())?;
    if anon_body.contains("\"db\"") {
        return Err(format!("anonymous request saw the preloaded service: {anon_body}").into());
    }
    // The management token sees the preloaded service and its sidecar.
    let services: serde_json::Value = client
        .get(format!("{base}/v1/agent/services"))
        .header("X-Consul-Token", "root-secret")
        .send()
        .await
        .map_err(|e| e.to_string())?
        .json()
        .await
        .map_err(|e| e.to_string())?;
    for want in ["db", "db-sidecar-proxy"] {
        if services.get(want).is_none() {
            return Err(format!("no {want} in /v1/agent/services: {services}").into());
        }
    }
    // The gRPC (xDS) port is served on the host's loopback.
    let grpc = sim.grpc_addr().ok_or("no gRPC address")?;
    tokio::net::TcpStream::connect(grpc)
        .await
        .map_err(|e| format!("gRPC port {grpc}: {e}"))?;

    sim.remove().await.map_err(|e| e.to_string())?;
    if exists(&id).await? {
        return Err(format!("container {id} still exists after remove").into());
    }
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let required = std::env::var("CONFORMANCE_REQUIRE_DOCKER").is_ok_and(|v| v == "1");
    let name = "container::agent_sim_image_with_acl_preload_and_grpc";
    let trial = match runtime().block_on(unavailable()) {
        None => Trial::test(name, || runtime().block_on(drive())),
        Some(why) if required => Trial::test(name, move || {
            Err(format!("CONFORMANCE_REQUIRE_DOCKER=1 but Docker cannot run: {why}").into())
        }),
        Some(why) => {
            eprintln!("note: {name} is ignored: {why}");
            // Run anyway (--include-ignored), it fails with the reason: never an empty pass.
            Trial::test(name, move || Err(why.into())).with_ignored_flag(true)
        }
    };
    libtest_mimic::run(&args, vec![trial]).exit();
}
