//! scenarios (placeholder: filled in by the conformance issue).
