//! `ShardInfo`: what a run with `conformance run --shard K/N` records about its slice of the
//! plan, so that `merge` can check the shards add up to exactly the planned run.

use serde::{Deserialize, Serialize};

use super::verdict::Profile;

/// Which slice of a sharded run a report holds (schema 1.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardInfo {
    /// 1-based shard number, `1..=count`.
    pub index: u32,
    /// How many shards the plan was split into.
    pub count: u32,
    /// Every scenario id of the whole (unsharded) plan, in plan order.
    pub planned: Vec<String>,
    /// The ids this shard ran (or reported skipped), in plan order.
    pub mine: Vec<String>,
    /// The profiles the whole run claims (`--profile`, else every profile of the plan).
    pub claimed: Vec<Profile>,
}

// === impl ShardInfo ===

impl ShardInfo {
    /// The environment note a shard's report carries (and a merged report drops), e.g.
    /// `shard 2/3: 15 of 44 planned scenario(s); conformance merge joins the shards`.
    pub fn note(&self) -> String {
        format!(
            "shard {}/{}: {} of {} planned scenario(s); conformance merge joins the shards",
            self.index,
            self.count,
            self.mine.len(),
            self.planned.len()
        )
    }
}
