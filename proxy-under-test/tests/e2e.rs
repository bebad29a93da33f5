//! End-to-end tests: the proxy run in-process (library API) against agent-sim, one test per
//! point of the proxy issue.

mod e2e {
    pub(crate) mod ports;
    pub(crate) mod support;

    mod agent_use;
    mod binary;
    mod config;
    mod faults;
    mod freshness;
    mod grpc;
    mod inbound;
    mod l7;
    mod sockets;
    mod startup;
    mod transparent;
    mod upstream;
}
