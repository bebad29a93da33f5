//! Checks registered on the agent's node on their own (`/v1/agent/check/register` and
//! `/deregister`), as opposed to the checks that come with a service registration.

use super::Store;
use crate::model::service::HealthCheck;

impl Store {
    /// Adds or replaces a check of the agent's node (an unchanged check keeps its indexes).
    pub(crate) fn put_local_check(&self, check: HealthCheck) {
        self.write(|st| {
            let index = st.next_index();
            st.catalog_index = st.catalog_index.max(index);
            st.put_check(check, index);
        });
    }

    /// Removes a check of the agent's node; false when there was none.
    pub(crate) fn remove_local_check(&self, id: &str) -> bool {
        let node = self.cfg.node_name.clone();
        self.write(|st| {
            let key = (node, id.to_owned());
            let Some(check) = st.checks.remove(&key) else {
                return false;
            };
            st.ttl_touched.remove(&key);
            let index = st.next_index();
            st.catalog_index = st.catalog_index.max(index);
            if !check.service_name.is_empty() {
                st.service_index.insert(check.service_name, index);
            }
            true
        })
    }
}
