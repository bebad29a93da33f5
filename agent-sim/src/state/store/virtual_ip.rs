//! Service virtual IPs: Consul gives every connect-enabled service name (the destination of a
//! connect proxy, a connect-native service, or the name of a resolver, router or splitter entry)
//! a stable address from `240.0.0.0/4`, counting up from `240.0.0.1`, and shows it on catalog
//! entries as the `consul-virtual` tagged address. Here an assigned address is never freed, and
//! index resets leave the table alone.

use std::borrow::Cow;
use std::net::Ipv4Addr;

use super::State;
use crate::model::config_entry::{ConfigEntry, ConfigError, Kind};
use crate::model::service::{NodeService, ServiceAddress, ServiceKind};

/// The tagged-address key Consul uses (`structs.TaggedAddressVirtualIP`).
pub(crate) const TAGGED_ADDRESS_VIRTUAL_IP: &str = "consul-virtual";

/// The base the offsets are added to (`startingVirtualIP`).
const START: u32 = u32::from_be_bytes([240, 0, 0, 0]);
/// The first offset that is never handed out (`virtualIPMaxOffset`): the last address is
/// 255.255.255.253.
const END_OFFSET: u32 = u32::from_be_bytes([15, 255, 255, 254]);

impl State {
    /// The virtual IP of service `name`, if one was assigned.
    pub(crate) fn virtual_ip(&self, name: &str) -> Option<Ipv4Addr> {
        self.virtual_ips
            .get(name)
            .map(|offset| Ipv4Addr::from(START + offset))
    }

    /// Gives `name` the next free virtual IP unless it has one (or the range is used up, where
    /// Consul fails the write; the simulator leaves the name without one).
    pub(crate) fn assign_virtual_ip(&mut self, name: &str) {
        if name.is_empty() || self.virtual_ips.contains_key(name) {
            return;
        }
        if let Some(offset) = next_offset(self.virtual_ips.len()) {
            self.virtual_ips.insert(name.to_owned(), offset);
        }
    }

    /// The instance as the catalog shows it: with `TaggedAddresses["consul-virtual"]` holding the
    /// virtual IP of the service it accepts mesh traffic for, and the instance's own port.
    pub(crate) fn with_virtual_ip<'a>(&self, svc: &'a NodeService) -> Cow<'a, NodeService> {
        let Some(ip) = connect_name(svc).and_then(|n| self.virtual_ip(n)) else {
            return Cow::Borrowed(svc);
        };
        let mut out = svc.clone();
        out.tagged_addresses.insert(
            TAGGED_ADDRESS_VIRTUAL_IP.to_owned(),
            ServiceAddress {
                address: ip.to_string(),
                port: svc.port,
            },
        );
        Cow::Owned(out)
    }

    /// Writes a config entry and, for resolvers, routers and splitters, assigns their service a
    /// virtual IP as Consul does.
    pub(crate) fn upsert_config(
        &mut self,
        entry: ConfigEntry,
        cas: Option<u64>,
        index: u64,
    ) -> Result<bool, ConfigError> {
        let kind = entry.kind();
        let name = entry.name().to_owned();
        let written = self.config.upsert(entry, cas, index)?;
        if written
            && matches!(
                kind,
                Kind::ServiceResolver | Kind::ServiceRouter | Kind::ServiceSplitter
            )
        {
            self.assign_virtual_ip(&name);
        }
        Ok(written)
    }
}

/// The offset the next name gets when `assigned` names hold one (none freed): Consul's counter
/// starts at 0 and is incremented before use.
fn next_offset(assigned: usize) -> Option<u32> {
    u32::try_from(assigned)
        .ok()
        .and_then(|n| n.checked_add(1))
        .filter(|o| *o < END_OFFSET)
}

/// The service name an instance makes connect-enabled: a proxy's destination, or a
/// connect-native service's own name.
pub(crate) fn connect_name(svc: &NodeService) -> Option<&str> {
    if svc.kind == ServiceKind::ConnectProxy {
        Some(svc.proxy.destination_service_name.as_str())
    } else if svc.connect.native {
        Some(svc.service.as_str())
    } else {
        None
    }
    .filter(|n| !n.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::config::SimConfig;
    use crate::state::store::Store;

    /// Runs `f` on a fresh store's state.
    fn with_state(f: impl FnOnce(&mut State)) {
        let store = Store::new(SimConfig::default()).unwrap();
        store.write(f);
    }

    #[test]
    fn offsets_render_from_240_0_0_1_and_carry_into_higher_octets() {
        with_state(|st| {
            assert_eq!(st.virtual_ip("a"), None);
            st.assign_virtual_ip("a");
            st.assign_virtual_ip("b");
            st.assign_virtual_ip("a");
            st.assign_virtual_ip("");
            assert_eq!(st.virtual_ip("a"), Some(Ipv4Addr::new(240, 0, 0, 1)));
            assert_eq!(st.virtual_ip("b"), Some(Ipv4Addr::new(240, 0, 0, 2)));
            assert_eq!(st.virtual_ip(""), None);
            for i in 0..300 {
                st.assign_virtual_ip(&format!("s{i}"));
            }
            // a, b, then s0..s299: s299 is the 302nd name.
            assert_eq!(st.virtual_ip("s299"), Some(Ipv4Addr::new(240, 0, 1, 46)));
        });
    }

    #[test]
    fn the_range_ends_before_virtual_ip_max_offset() {
        let last = END_OFFSET - 1;
        assert_eq!(next_offset(0), Some(1));
        assert_eq!(next_offset(last as usize - 1), Some(last));
        assert_eq!(next_offset(last as usize), None);
        assert_eq!(
            Ipv4Addr::from(START + last),
            Ipv4Addr::new(255, 255, 255, 253)
        );
    }
}
