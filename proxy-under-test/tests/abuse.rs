//! Abuse of the reference proxy's listeners, with the proxy as the real binary in a child
//! process (so descriptor and memory numbers are its own): garbage, truncated and stalled TLS
//! handshakes, half-open and thousands of idle connections on the public listener, malformed
//! HTTP/1.1 and hostile HTTP/2 on the L7 listener, generated path-normalization bypass attempts
//! against an L7 intention (`abuse/normalization.rs`), garbage and hostile h2c on the upstream
//! listeners. Properties: no crash (a good client is served after every attack), stalls closed by
//! the handshake timeout, descriptors back to the baseline, bounded memory.
//!
//! Proptest cases per property: `PROPTEST_CASES`, else a short CI default (see `abuse/raw.rs`).

// The shared end-to-end fixtures; not every helper is used here.
#[allow(dead_code)]
#[path = "e2e"]
mod e2e {
    pub(crate) mod ports;
    pub(crate) mod support;
}

mod abuse {
    pub(crate) mod child;
    pub(crate) mod frames;
    pub(crate) mod raw;

    mod idle;
    mod l7;
    mod normalization;
    mod tls;
    mod upstream;
}
