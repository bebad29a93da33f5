//! Index reset: every index goes backwards, as after a snapshot restore. The data stays; all
//! blocked queries return at once with the new, smaller indexes.

use super::Store;

/// The raft index the store restarts from after a reset.
pub(crate) const RESET_BASE: u64 = 2;

impl Store {
    /// Renumbers every table to `RESET_BASE` and wakes every blocked query.
    pub(crate) fn reset_indexes(&self) {
        self.write(|st| {
            let base = RESET_BASE;
            st.index = base;
            st.ca.reset_indexes(base);
            st.ca_config_index = base;
            st.config.reset_indexes(base);
            for node in st.nodes.values_mut() {
                node.create_index = base;
                node.modify_index = base;
            }
            for svc in st.services.values_mut() {
                svc.create_index = base;
                svc.modify_index = base;
            }
            for check in st.checks.values_mut() {
                check.create_index = base;
                check.modify_index = base;
            }
            st.catalog_index = base;
            st.prepared_query_index = st.prepared_query_index.min(base);
            for q in st.prepared_queries.values_mut() {
                q.create_index = base;
                q.modify_index = base;
            }
            for idx in st.service_index.values_mut() {
                *idx = base;
            }
            for entry in st.leaves.values_mut() {
                entry.leaf.create_index = base;
                entry.leaf.modify_index = base;
            }
        });
        self.abandon_all();
    }
}
