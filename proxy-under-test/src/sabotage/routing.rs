//! The L7 outbound path's sabotages: routes, splits, subsets, retries, timeouts, prefix rewrite,
//! header changes, circuit breaking, outlier detection, hash policies, and routing pinned to a
//! connection's first snapshot.

use std::time::Duration;

use super::Sabotage;
use super::hooks::Hooks;
use crate::route::limits::Outlier;
use crate::route::{Lb, LbPolicy, RouteTable};

/// `retry-unbounded`'s retry count.
pub(crate) const UNBOUNDED_RETRIES: u32 = 10;

impl Hooks {
    /// `ignore-subsets`: no filter (every instance of the service).
    pub(crate) fn subset_filter<'a>(&self, filter: &'a str) -> &'a str {
        if self.has(Sabotage::IgnoreSubsets) {
            ""
        } else {
            filter
        }
    }

    /// `ignore-routes`: the last route (the chain's catch-all default).
    pub(crate) fn route_index(&self, table: &RouteTable, matched: Option<usize>) -> Option<usize> {
        if self.has(Sabotage::IgnoreRoutes) {
            return table.routes.len().checked_sub(1);
        }
        matched
    }

    /// `ignore-splits`: always the first split.
    pub(crate) fn split_roll(&self, roll: u32) -> u32 {
        if self.has(Sabotage::IgnoreSplits) {
            0
        } else {
            roll
        }
    }

    /// `no-retries`: none; `retry-unbounded`: ten, whatever the route says.
    pub(crate) fn max_retries(&self, n: u32) -> u32 {
        if self.has(Sabotage::NoRetries) {
            0
        } else if self.has(Sabotage::RetryUnbounded) && n > 0 {
            UNBOUNDED_RETRIES
        } else {
            n
        }
    }

    /// `ignore-timeouts`: no route timeout.
    pub(crate) fn route_timeout(&self, t: Duration) -> Option<Duration> {
        (!self.has(Sabotage::IgnoreTimeouts)).then_some(t)
    }

    /// `ignore-prefix-rewrite`: never.
    pub(crate) fn applies_prefix_rewrite(&self) -> bool {
        !self.has(Sabotage::IgnorePrefixRewrite)
    }

    /// `ignore-header-manipulation`: never.
    pub(crate) fn applies_header_ops(&self) -> bool {
        !self.has(Sabotage::IgnoreHeaderManipulation)
    }

    /// `ignore-limits`: unlimited.
    pub(crate) fn in_flight_limit(&self, n: usize) -> usize {
        if self.has(Sabotage::IgnoreLimits) {
            usize::MAX
        } else {
            n
        }
    }

    /// `no-outlier-detection`: none.
    pub(crate) fn outlier(&self, o: Option<Outlier>) -> Option<Outlier> {
        o.filter(|_| !self.has(Sabotage::NoOutlierDetection))
    }

    /// `ignore-hash-policy`: hash policies become round robin; `ignore-lb-policy`: every
    /// policy does.
    pub(crate) fn lb(&self, lb: &Lb) -> Lb {
        if self.has(Sabotage::IgnoreLbPolicy)
            || (self.has(Sabotage::IgnoreHashPolicy) && lb.policy == LbPolicy::Hash)
        {
            return Lb::default();
        }
        lb.clone()
    }

    /// `stale-routes`: yes.
    pub(crate) fn pin_routes(&self) -> bool {
        self.has(Sabotage::StaleRoutes)
    }
}
