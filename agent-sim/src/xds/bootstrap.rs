//! `consul connect envoy -bootstrap`'s JSON. SKELETON: owned by the bootstrap work.
