//! Background work of a running sim: turning fault changes into store transitions (servers lost
//! and back), pruning rotated-out CA roots, and running health checks.

use std::time::Duration;

use time::OffsetDateTime;
use tokio::sync::watch;

use crate::state::control::Control;

/// How often maintenance runs. Root pruning and TTL expiry are seconds-granular anyway.
const TICK: Duration = Duration::from_millis(250);

/// Follows the fault set and tells the store when the servers are lost or back.
pub(crate) async fn fault_transitions(c: Control, mut shutdown: watch::Receiver<bool>) {
    let mut faults = c.faults.subscribe();
    loop {
        faults.borrow_and_update();
        c.sync_servers();
        tokio::select! {
            r = faults.changed() => if r.is_err() { return },
            _ = shutdown.changed() => return,
        }
    }
}

/// Periodic work: root pruning, TTL expiry, check runs.
pub(crate) async fn maintenance(c: Control, mut shutdown: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        if c.store.servers_down() {
            continue;
        }
        let now = OffsetDateTime::now_utc();
        prune_roots(&c, now);
        if c.store.cfg.run_checks {
            crate::state::checks::run_due(&c, now).await;
        }
    }
}

fn prune_roots(c: &Control, now: OffsetDateTime) {
    let due = c.store.read(|st| st.ca.prune_due(now));
    if due {
        c.store.write(|st| {
            let index = st.next_index();
            st.ca.prune(now, index)
        });
    }
}
