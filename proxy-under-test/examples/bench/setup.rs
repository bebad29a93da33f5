//! The world the benchmark measures: an in-process agent-sim with `db` (the app) and `web`,
//! the reference proxy as both sidecars, and, when the binary is there, the Envoy pair with
//! certificates from the same sim's CA. Everything is dropped (Envoy killed) with the world.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use proxy_under_test::tls::{ExpectedServer, Leaf, TrustRoots};
use proxy_under_test::{AgentClient, Proxy, RunningProxy};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::envoy::{self, Envoy, Pem};
use super::{BoxError, Path, SMALL};

/// The paths to measure (label, path) and what keeps them alive.
pub(crate) struct World {
    pub(crate) paths: Vec<(String, Path)>,
    pub(crate) envoy_version: Option<String>,
    _envoys: Vec<Envoy>,
    _proxies: Vec<RunningProxy>,
    _sim: agent_sim::Listening,
    _dir: tempfile::TempDir,
}

pub(crate) async fn free_addr() -> Result<SocketAddr, BoxError> {
    Ok(TcpListener::bind("127.0.0.1:0").await?.local_addr()?)
}

/// One echo round trip, retried until it works (a sidecar pair needs its config first).
async fn wait_working(label: &str, path: &Path) -> Result<(), BoxError> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let attempt = async {
            let mut s = path.connect().await?;
            s.write_all(b"E").await?;
            s.write_all(&[7u8; SMALL]).await?;
            let mut buf = [0u8; SMALL];
            s.read_exact(&mut buf).await?;
            Ok::<_, BoxError>(())
        };
        match tokio::time::timeout(Duration::from_secs(5), attempt).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(e)) if Instant::now() > deadline => {
                return Err(format!("{label}: no echo: {e}").into());
            }
            Err(_) if Instant::now() > deadline => {
                return Err(format!("{label}: echo timed out").into());
            }
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// What both benchmarks measure through: an in-process agent-sim with `db` (the app at `app`,
/// and `db_protocol` in its `service-defaults` if given) and `web` (an upstream listener for
/// `db`), `web -> db` allowed, and the reference proxy as both sidecars.
pub(crate) struct Mesh {
    pub(crate) sim: agent_sim::Listening,
    pub(crate) db_proxy: RunningProxy,
    pub(crate) web_proxy: RunningProxy,
}

pub(crate) async fn mesh(app: SocketAddr, db_protocol: Option<&str>) -> Result<Mesh, BoxError> {
    let sim = agent_sim::AgentSim::builder()
        .run_checks(false)
        .start()
        .await?;
    let c = sim.control();
    let public = free_addr().await?;
    let upstream = free_addr().await?;
    if let Some(protocol) = db_protocol {
        c.upsert_config_entry(
            &json!({"Kind": "service-defaults", "Name": "db", "Protocol": protocol}),
        )?;
    }
    // The sidecar is registered on its own, without the TCP/alias checks a `SidecarService`
    // gets: health checks do not run here, and web's sidecar needs db's proxy passing.
    c.register(&json!({"Name": "db", "Address": "127.0.0.1", "Port": app.port()}))?;
    c.register(&json!({"Kind": "connect-proxy", "Name": "db-sidecar-proxy",
        "ID": "db-sidecar-proxy", "Address": "127.0.0.1", "Port": public.port(),
        "Proxy": {"DestinationServiceName": "db", "DestinationServiceID": "db",
            "LocalServiceAddress": "127.0.0.1", "LocalServicePort": app.port()}}))?;
    c.register(&json!({"Name": "web", "Address": "127.0.0.1", "Port": 9,
        "Connect": {"SidecarService": {"Port": free_addr().await?.port(), "Proxy": {"Upstreams": [
            {"DestinationName": "db", "LocalBindAddress": "127.0.0.1",
             "LocalBindPort": upstream.port()}]}}}}))?;
    c.put_intention("web", "db", &json!({"Action": "allow"}))?;
    let agent = || AgentClient::new(&sim.http_addr(), None);
    let db_proxy = Proxy::new(agent()?, "db-sidecar-proxy").start().await?;
    let web_proxy = Proxy::new(agent()?, "web-sidecar-proxy").start().await?;
    Ok(Mesh {
        sim,
        db_proxy,
        web_proxy,
    })
}

pub(crate) async fn world(app: SocketAddr, envoy_bin: &std::path::Path) -> Result<World, BoxError> {
    let Mesh {
        sim,
        db_proxy,
        web_proxy,
    } = mesh(app, None).await?;
    let c = sim.control();
    let td = c.trust_domain();

    let web = c.issue_identity("web")?;
    let db = c.issue_identity("db")?;
    let roots_pem = c.root_pems().join("");
    let leaf = Leaf::from_pem(&web.cert_chain_pem, &web.private_key_pem)?;
    let roots = TrustRoots::from_pems(c.root_pems().iter().map(String::as_str), "")?;
    let expected = ExpectedServer {
        namespace: "default".into(),
        datacenter: "dc1".into(),
        service: "db".into(),
    };
    let client_tls = proxy_under_test::tls::outbound(&leaf, &roots, expected)?;

    let mut paths = vec![
        ("plain loopback TCP".to_owned(), Path::Plain(app)),
        (
            "client mTLS → proxy-under-test → app".to_owned(),
            Path::Tls(db_proxy.inbound_addr(), client_tls.clone()),
        ),
    ];
    let up = web_proxy
        .upstream_addr("db")
        .ok_or("the web sidecar has no upstream listener for db")?;
    let ref_pair = (
        "client → proxy-under-test A → mTLS → proxy-under-test B → app".to_owned(),
        Path::Plain(up),
    );

    let dir = tempfile::tempdir()?;
    let mut envoys = Vec::new();
    let mut envoy_version = None;
    if envoy_bin.is_file() {
        envoy_version = Some(envoy::version(envoy_bin));
        let (b_listen, a_listen) = (free_addr().await?, free_addr().await?);
        let (b_admin, a_admin) = (free_addr().await?.port(), free_addr().await?.port());
        let b_leaf = Pem {
            chain: db.cert_chain_pem.clone(),
            key: db.private_key_pem.clone(),
        };
        let a_leaf = Pem {
            chain: web.cert_chain_pem.clone(),
            key: web.private_key_pem.clone(),
        };
        let b_cfg = envoy::server_bootstrap(b_listen, app, b_admin, &b_leaf, &roots_pem, &td);
        envoys.push(Envoy::start(envoy_bin, dir.path(), "envoy-b", &b_cfg, b_listen).await?);
        let a_cfg = envoy::client_bootstrap(a_listen, b_listen, a_admin, &a_leaf, &roots_pem, &td);
        envoys.push(Envoy::start(envoy_bin, dir.path(), "envoy-a", &a_cfg, a_listen).await?);
        paths.push((
            "client mTLS → Envoy → app".to_owned(),
            Path::Tls(b_listen, client_tls),
        ));
        paths.push(ref_pair);
        paths.push((
            "client → Envoy A → mTLS → Envoy B → app".to_owned(),
            Path::Plain(a_listen),
        ));
    } else {
        eprintln!(
            "no Envoy at {} (scripts/install-envoy.sh, or --envoy PATH): measuring the reference proxy only",
            envoy_bin.display()
        );
        paths.push(ref_pair);
    }
    for (label, path) in &paths {
        wait_working(label, path).await?;
    }
    Ok(World {
        paths,
        envoy_version,
        _envoys: envoys,
        _proxies: vec![db_proxy, web_proxy],
        _sim: sim,
        _dir: dir,
    })
}
