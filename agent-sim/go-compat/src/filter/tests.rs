//! Unit tests of the filter: go-bexpr v0.1.2's own grammar vectors, Go `strconv` behaviour, and
//! tables of expressions over realistic endpoint items.

mod coerce;
mod errors;
mod grammar;
mod limits;
mod matching;
mod properties;
mod support;
