//! The targets of a transparent scenario's exclusions (`[setup.transparent] exclude`): a plain
//! echo server in the pod on the port `-exclude-inbound-port` names (as for ssh), and plain echo
//! servers outside the pod on the port `-exclude-outbound-port` names and on the address
//! `-exclude-outbound-cidr` names, and a UID for `-exclude-uid` (the proxy's plus two, so it
//! is neither the proxy's nor the one `redirect-wrong-uid` uses); and the flags that tell the
//! redirect step so (those of `consul connect redirect-traffic`).

use std::net::SocketAddr;

use scenarios::Exclusion;
use tokio::net::TcpListener;

use super::apps::{self, App, AppKind};
use crate::error::Error;
use crate::netns::{NODE_EXCLUDED_IP, NODE_IP, Node, POD_IP};

/// The servers a scenario's exclusions name (each only when the scenario excludes it).
#[derive(Debug, Default)]
pub(crate) struct Excluded {
    /// In the pod, on every address; its port is excluded from the inbound capture.
    pub(crate) inbound: Option<App>,
    /// Outside the pod on `NODE_IP`; its port is excluded from the outbound capture.
    pub(crate) outbound_port: Option<App>,
    /// Outside the pod on `NODE_EXCLUDED_IP`; that address is excluded.
    pub(crate) outbound_cidr: Option<App>,
    /// A UID whose dials are excluded from the outbound capture.
    pub(crate) uid: Option<u32>,
}

impl Excluded {
    /// Starts a server for each of `exclude` (the calling thread is in the pod); `proxy_uid`
    /// is the proxy's UID.
    pub(crate) async fn start(
        node: &Node,
        exclude: &[Exclusion],
        proxy_uid: u32,
    ) -> Result<Self, Error> {
        let mut out = Self::default();
        for e in exclude {
            match e {
                Exclusion::InboundPort => {
                    let l = TcpListener::bind(SocketAddr::from(([0, 0, 0, 0], 0)))
                        .await
                        .map_err(|e| Error::io("bind the pod's excluded-port server", e))?;
                    out.inbound = Some(apps::on_listener(AppKind::Echo, l)?);
                }
                Exclusion::OutboundPort => {
                    let l = node
                        .listen(SocketAddr::from((NODE_IP, 0)))
                        .map_err(|e| Error::io("bind the excluded-port server outside", e))?;
                    out.outbound_port = Some(apps::on_listener(AppKind::Echo, l)?);
                }
                Exclusion::OutboundCidr => {
                    let l = node
                        .listen(SocketAddr::from((NODE_EXCLUDED_IP, 0)))
                        .map_err(|e| Error::io("bind the excluded-address server outside", e))?;
                    out.outbound_cidr = Some(apps::on_listener(AppKind::Echo, l)?);
                }
                Exclusion::Uid => out.uid = Some(proxy_uid + 2),
            }
        }
        Ok(out)
    }

    /// The pod's excluded-port server as dialed from outside the pod.
    pub(crate) fn inbound_addr(&self) -> Option<SocketAddr> {
        self.inbound
            .as_ref()
            .map(|a| SocketAddr::from((POD_IP, a.addr.port())))
    }

    /// `-exclude-inbound-port N`, `-exclude-outbound-port N`, `-exclude-outbound-cidr A/32`,
    /// `-exclude-uid N`.
    pub(crate) fn flags(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(a) = &self.inbound {
            out.extend(["-exclude-inbound-port".into(), a.addr.port().to_string()]);
        }
        if let Some(a) = &self.outbound_port {
            out.extend(["-exclude-outbound-port".into(), a.addr.port().to_string()]);
        }
        if let Some(a) = &self.outbound_cidr {
            out.extend([
                "-exclude-outbound-cidr".into(),
                format!("{}/32", a.addr.ip()),
            ]);
        }
        if let Some(uid) = self.uid {
            out.extend(["-exclude-uid".into(), uid.to_string()]);
        }
        out
    }
}
