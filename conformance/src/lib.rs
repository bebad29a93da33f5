//! The conformance runner (filled in by the conformance issue).
