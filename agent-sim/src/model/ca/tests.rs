//! Tests of the CA as a whole: certificate contents checked with x509-parser, chains checked
//! with rustls' webpki verifier, wire JSON snapshots, rotation, pruning, forgeries and the
//! configuration endpoint.

mod bent;
mod chain;
mod config;
mod forge;
mod key_types;
mod rotation;
mod snapshots;
mod support;
mod x509;

/// The store keeps the CA behind a lock shared across tasks.
#[test]
fn ca_is_send_sync_and_clone() {
    fn check<T: Send + Sync + Clone + 'static>() {}
    check::<super::Ca>();
    check::<super::Leaf>();
    check::<super::ClientIdentity>();
    check::<super::CaError>();
}
