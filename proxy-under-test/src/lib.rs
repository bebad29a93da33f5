//! The reference sidecar proxy (filled in by the proxy issue).
