//! The registrations `Play` writes: the `db` service with its sidecar (transparent mode, unix
//! sockets, addresses as the setup and ports say) and each harness-run instance.

use scenarios::InstanceSpec;
use serde_json::{Map, Value, json};

use super::error::sim;
use super::{DEFAULT_OUTBOUND_PORT, LOOPBACK, Play, PlayError, SERVICE, instance_registration};
use crate::state::control::Control;

impl Play {
    /// The `db` registration (as `PUT /v1/agent/service/register` takes it) with its sidecar:
    /// transparent mode, unix sockets and addresses as the setup and [`Ports`](super::Ports) say.
    pub fn registration(&self) -> Result<Value, PlayError> {
        let mut config: Map<String, Value> = self.knobs.clone().into_iter().collect();
        config.extend(self.setup.proxy_config.clone());
        let mut upstreams = Vec::new();
        for name in &self.upstreams {
            upstreams.push(self.upstream_entry(name)?);
        }
        let mut proxy = json!({"Config": config, "Upstreams": upstreams});
        if let Some(t) = &self.setup.transparent {
            proxy["Mode"] = json!("transparent");
            proxy["TransparentProxy"] = json!({
                "OutboundListenerPort": t.outbound_port.unwrap_or(DEFAULT_OUTBOUND_PORT),
                "DialedDirectly": t.dialed_directly,
            });
        }
        if self.setup.ipv6 {
            // Consul defaults LocalServiceAddress to 127.0.0.1 (agent/sidecar_service.go); the
            // app listens on ::1 only.
            proxy["LocalServiceAddress"] = json!("::1");
        }
        let address = self.ports.service_address.as_deref().unwrap_or(LOOPBACK);
        let mut sidecar = json!({"Port": self.ports.inbound, "Proxy": proxy});
        if self.ports.service_address.is_some() {
            sidecar["Address"] = json!(address);
        }
        let mut reg = json!({"ID": SERVICE, "Name": SERVICE, "Address": address});
        match (self.setup.app_socket, &self.ports.app_socket) {
            (true, Some(path)) => reg["SocketPath"] = json!(path),
            (true, None) => return Err(PlayError::NoPort("the app's unix socket".into())),
            (false, _) => reg["Port"] = json!(self.ports.app),
        }
        reg["Connect"] = json!({"SidecarService": sidecar});
        Ok(reg)
    }

    /// One `Upstreams[]` entry: a loopback port, or a unix socket.
    fn upstream_entry(&self, name: &str) -> Result<Value, PlayError> {
        let spec = self.setup.upstreams.iter().find(|u| u.name == name);
        if let Some(spec) = spec.filter(|s| s.socket) {
            let path =
                self.ports.upstream_sockets.get(name).ok_or_else(|| {
                    PlayError::NoPort(format!("the unix socket of upstream {name}"))
                })?;
            let mut entry = json!({"DestinationName": name, "LocalBindSocketPath": path});
            if let Some(mode) = &spec.socket_mode {
                entry["LocalBindSocketMode"] = json!(mode);
            }
            return Ok(entry);
        }
        let port = self
            .ports
            .upstreams
            .get(name)
            .ok_or_else(|| PlayError::NoPort(format!("upstream {name}")))?;
        let mut entry = json!({
            "DestinationName": name,
            "LocalBindAddress": LOOPBACK,
            "LocalBindPort": port,
        });
        if spec.is_some_and(|s| s.prepared_query) {
            entry["DestinationType"] = json!("prepared_query");
        }
        Ok(entry)
    }

    pub(super) fn register(&self, control: &Control) -> Result<(), PlayError> {
        sim("register db", control.register(&self.registration()?))
    }

    pub(super) fn register_instance(
        &self,
        control: &Control,
        spec: &InstanceSpec,
    ) -> Result<(), PlayError> {
        let port = self
            .ports
            .instances
            .get(&spec.id)
            .ok_or_else(|| PlayError::NoPort(format!("instance {}", spec.id)))?;
        let address = self.ports.instance_address.as_deref().unwrap_or(LOOPBACK);
        let body = instance_registration(spec, address, *port);
        sim(
            &format!("register instance {}", spec.id),
            control.catalog_register(&body),
        )
    }
}
