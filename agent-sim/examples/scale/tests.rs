//! The benchmark at 1/100 scale, in-process, so it cannot rot: every phase runs and every
//! wake-up write wakes exactly the watchers it concerns.

use clap::Parser;

use super::{Args, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_smoke_at_one_hundredth() {
    let args = Args::parse_from([
        "scale",
        "--services=100",
        "--intentions=1000",
        "--legacy=10",
        "--watchers=100",
        "--samples=200",
        "--concurrency=4",
        "--quiet=300ms",
        "--in-process",
    ]);
    let r = run(&args).await.expect("benchmark ran");
    assert!(r.rows.len() > 10, "rows: {}", r.rows.len());
    let wakes: Vec<&str> = r.wakes.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(wakes, ["none", "match", "health", "leaf"]);
    for (name, w) in &r.wakes {
        assert_eq!(w.answered, w.expected, "{name}: {w:?}");
        assert_eq!(w.spurious, 0, "{name}: {w:?}");
        assert_eq!(w.errors, 0, "{name}: {w:?}");
        if *name != "none" {
            assert!(w.expected > 0 && w.last.is_some(), "{name}: {w:?}");
        }
    }
}
