//! Observations only transparent mode has: the app dialing a virtual IP, an address no service
//! owns, and the pod's TCP table while a captured connection is open (a redirect loop shows as
//! more than one connection accepted by the outbound listener).

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use scenarios::{Outcome, OutsideTarget};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::Exec;
use super::wait::Observation;
use crate::probe::{self, CONNECT_TIMEOUT};
use crate::world::Pod;

/// The port the app dials on a virtual IP (any port maps to the service).
const VIRTUAL_PORT: u16 = 8080;

/// How long a captured connection is watched for an answer.
const WATCH: Duration = Duration::from_secs(5);

impl Exec<'_> {
    /// `upstream`'s virtual IP as the app dials it, or why there is none.
    pub(super) fn virtual_ip_target(&self, upstream: &str) -> Result<SocketAddr, Observation> {
        match self.world.control().virtual_ip(upstream) {
            Some(ip) => Ok(SocketAddr::from((ip, VIRTUAL_PORT))),
            None => Err(Observation::new(
                false,
                format!("the agent has no virtual IP for {upstream}"),
            )),
        }
    }

    fn pod(&self) -> Result<&Pod, Observation> {
        self.world
            .pod
            .as_ref()
            .ok_or_else(|| Observation::new(false, "not a transparent-mode world"))
    }

    /// The app dials the outside server (an address no service owns).
    /// The app (or, with `as_excluded_uid`, a process of the excluded UID) dials a server
    /// outside the pod that belongs to no service.
    pub(super) async fn observe_unknown(
        &mut self,
        outcome: Outcome,
        to: OutsideTarget,
        as_excluded_uid: bool,
    ) -> Observation {
        let pod = match self.pod() {
            Ok(p) => p,
            Err(o) => return o,
        };
        let server = match to {
            OutsideTarget::Outside => Some(&pod.outside),
            OutsideTarget::ExcludedPort => pod.excluded.outbound_port.as_ref(),
            OutsideTarget::ExcludedCidr => pod.excluded.outbound_cidr.as_ref(),
        };
        let Some(server) = server else {
            return Observation::new(false, "the world has no such server outside the pod");
        };
        let outside = server.addr;
        let token = probe::token();
        let answer = if as_excluded_uid {
            match (pod.excluded.uid, self.exe) {
                (Some(uid), Some(exe)) => exchange_as(exe, uid, outside, &token).await,
                _ => return Observation::new(false, "no excluded UID or no binary to dial with"),
            }
        } else {
            exchange(outside, &token).await
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        if let Some((i, _)) = self.world.instances.who_saw(&token) {
            return Observation::new(
                false,
                format!("the dial of {outside} was sent to instance {}", i.id),
            );
        }
        let reached = server.record.saw(token.as_bytes());
        match outcome {
            Outcome::Refused if reached => Observation::new(
                false,
                format!(
                    "the dial of {outside} went through to it ({})",
                    describe(&answer)
                ),
            ),
            Outcome::Refused => Observation::new(
                true,
                format!(
                    "nothing reached {outside} or any instance ({})",
                    describe(&answer)
                ),
            ),
            Outcome::Allowed => match &answer {
                Ok(line) if line.contains(&token) && reached => {
                    Observation::new(true, format!("passed through to {outside}"))
                }
                _ => Observation::new(
                    false,
                    format!("not passed through to {outside} ({})", describe(&answer)),
                ),
            },
        }
    }

    /// Holds one captured connection (to the first implicit upstream's virtual IP) and watches
    /// the pod's TCP table for the outbound listener's accepted connections until it is
    /// answered.
    pub(super) async fn observe_no_loop(&mut self) -> Observation {
        let Some(upstream) = self.world.play.implicit_upstreams().first().cloned() else {
            return Observation::new(false, "the scenario has no implicit upstream to dial");
        };
        let to = match self.virtual_ip_target(&upstream) {
            Ok(a) => a,
            Err(o) => return o,
        };
        let pod = match self.pod() {
            Ok(p) => p,
            Err(o) => return o,
        };
        let token = probe::token();
        let (most, answer) = {
            let watch = async {
                let mut most = 0;
                loop {
                    if let Ok(n) = pod.captured_now() {
                        most = most.max(n);
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    if most > 1 {
                        return most;
                    }
                }
            };
            tokio::select! {
                a = exchange(to, &token) => (None, a),
                most = watch => (Some(most), Err("a loop was seen".into())),
            }
        };
        let reached = self
            .world
            .instances
            .who_saw(&token)
            .map(|(i, _)| i.id.clone());
        match (most, reached) {
            (Some(n), _) => Observation::new(
                false,
                format!(
                    "{n} connections accepted by the outbound listener while the app had one \
                     open: the proxy's own dial was captured"
                ),
            ),
            (None, Some(id)) => Observation::new(
                true,
                format!("one captured connection, carried to {id} without being captured again"),
            ),
            (None, None) => Observation::new(
                false,
                format!(
                    "the captured connection reached no instance ({})",
                    describe(&answer)
                ),
            ),
        }
    }
}

/// What an app-side exchange came to.
fn describe(answer: &Result<String, String>) -> String {
    match answer {
        Ok(line) => format!("answered {line:?}"),
        Err(e) => e.clone(),
    }
}

/// One dial from inside the pod by `exe dial` running as `uid` (its process is in the pod: it
/// is started from the pod's thread).
async fn exchange_as(exe: &Path, uid: u32, to: SocketAddr, token: &str) -> Result<String, String> {
    let child = tokio::process::Command::new(exe)
        .arg("dial")
        .arg(to.to_string())
        .arg(token)
        .uid(uid)
        .gid(uid)
        .env_clear()
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(WATCH + CONNECT_TIMEOUT, child)
        .await
        .map_err(|_| format!("the dial as uid {uid} did not finish"))?
        .map_err(|e| format!("run {} dial as uid {uid}: {e}", exe.display()))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(format!(
            "as uid {uid}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The app's side of one dial from inside the pod: connect, send the token line, read one
/// line back (bounded).
async fn exchange(to: SocketAddr, token: &str) -> Result<String, String> {
    let mut s = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(to))
        .await
        .map_err(|_| "connect timed out".to_owned())?
        .map_err(|e| format!("connect failed: {e}"))?;
    s.write_all(format!("{token}\n").as_bytes())
        .await
        .map_err(|e| format!("write failed: {e}"))?;
    let deadline = Instant::now() + WATCH;
    let mut line = String::new();
    match tokio::time::timeout_at(deadline, BufReader::new(&mut s).read_line(&mut line)).await {
        Err(_) => Err(format!("no answer within {} ms", WATCH.as_millis())),
        Ok(Err(e)) => Err(format!("read failed: {e}")),
        Ok(Ok(0)) => Err("closed without an answer".into()),
        Ok(Ok(_)) => Ok(line.trim().to_owned()),
    }
}
