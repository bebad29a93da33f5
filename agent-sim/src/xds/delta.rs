//! The delta-ADS protocol state machine (no IO). SKELETON: owned by the protocol work.
