//! reports (placeholder: filled in by the conformance issue).
