//! The one accept loop every listener of the data plane runs (public, upstream TCP and unix,
//! transparent outbound): accept until the data plane stops, hand each connection over, and ride
//! out accept errors (e.g. EMFILE) with a short pause instead of spinning or giving up.

use std::future::Future;
use std::io;
use std::time::Duration;

use super::{Shared, flag_set};

/// Pause after a failed accept.
const RETRY_AFTER: Duration = Duration::from_millis(50);

/// Accepts with `accept` until the data plane's stop flag is set; each accepted connection goes
/// to `serve` (which spawns its task). `listener` names the listener in the warning logged for a
/// failed accept.
pub(crate) async fn until_stop<S, Fut>(
    shared: &Shared,
    listener: &str,
    mut accept: impl FnMut() -> Fut,
    mut serve: impl FnMut(S),
) where
    Fut: Future<Output = io::Result<S>>,
{
    let mut stop = shared.stop.clone();
    loop {
        tokio::select! {
            _ = flag_set(&mut stop) => break,
            accepted = accept() => match accepted {
                Ok(conn) => serve(conn),
                Err(e) => {
                    tracing::warn!(listener, error = %e, "accept failed");
                    tokio::time::sleep(RETRY_AFTER).await;
                }
            },
        }
    }
}
