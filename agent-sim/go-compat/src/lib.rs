//! go-compat: the bottom floor of agent-sim. Go's formats exactly as Consul's Go code reads and
//! writes them, with no Consul model and no IO: `time.Duration` text ([`duration`]), `%q` and
//! go-multierror texts ([`gotext`]), `encoding/json` bytes ([`gojson`]), request-body decoding
//! with Go's key matching and error texts ([`decode`]) and go-bexpr `?filter=` expressions
//! ([`filter`]).
//!
//! A crate of its own so the compiler holds the floor (it cannot import anything above it), and
//! so the scenario crate shares the one Go duration parser without depending on the simulator.
#![forbid(unsafe_code)]

pub mod decode;
pub mod duration;
pub mod filter;
pub mod gojson;
pub mod gotext;
