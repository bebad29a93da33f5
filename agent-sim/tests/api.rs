//! Integration tests of the simulated agent's HTTP API: wire shapes (snapshots), blocking
//! queries, faults, ACLs, rotation, bad input and `?filter=`.

mod api {
    pub(crate) mod support;

    mod acl;
    mod bad_input;
    mod blocking;
    mod central;
    mod csr_limit;
    mod endpoints;
    mod faults;
    mod filter;
    mod legacy_intentions;
    mod mesh;
    mod prepared_query;
    mod rotation;
    mod transparent;
    mod wire;
}
