//! agent-sim at scale (a program, not a test): 10,000 services with sidecars, 100,000
//! intentions and 10,000 blocked watchers, driven through the real HTTP API over loopback.
//! Run with `cargo run --release -p agent-sim --example scale` (flags: `--help`) and read the
//! Markdown it prints. The sim runs in a child process (this program with `--serve`) so its
//! memory is measured alone; `--in-process` keeps it in this process (the smoke test does).

mod latency;
mod load;
mod target;
mod watch;

#[cfg(test)]
mod tests;

use std::time::Duration;

use clap::Parser;
use serde_json::json;

use latency::ms;
use target::{Mem, Target};
use watch::{Kind, Watchers};

/// Sizes and modes.
#[derive(Debug, Clone, Parser)]
#[command(
    about = "agent-sim at scale: registrations, intentions, authorize/match latency, watchers"
)]
pub(crate) struct Args {
    /// Services to register, each with a sidecar proxy.
    #[arg(long, default_value_t = 10_000)]
    services: usize,
    /// Intentions to write (as one service-intentions entry per service, plus `*`).
    #[arg(long, default_value_t = 100_000)]
    intentions: usize,
    /// Intentions to create through the legacy API afterwards.
    #[arg(long, default_value_t = 1_000)]
    legacy: usize,
    /// Blocked watchers (thirds: leaf, intention match, health/connect).
    #[arg(long, default_value_t = 10_000)]
    watchers: usize,
    /// Upstreams the health watchers share.
    #[arg(long, default_value_t = 10)]
    upstreams: usize,
    /// Authorize calls timed (match calls: a quarter as many each way).
    #[arg(long, default_value_t = 20_000)]
    samples: usize,
    /// Concurrent connections for the concurrent writes.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// How long to keep listening for spurious answers after a write.
    #[arg(long, default_value = "1s", value_parser = humantime_ms)]
    quiet: Duration,
    /// Run the sim in this process (its memory then includes the client's).
    #[arg(long)]
    in_process: bool,
    /// Child mode: serve a sim and print its URL (used by the benchmark itself).
    #[arg(long, hide = true)]
    serve: bool,
}

fn humantime_ms(s: &str) -> Result<Duration, String> {
    agent_sim::duration::GoDuration::parse(s)
        .map(|d| d.to_std())
        .map_err(|e| e.to_string())
}

/// One row of the results table.
pub(crate) struct Row {
    pub(crate) measure: String,
    pub(crate) value: String,
    pub(crate) target: &'static str,
}

/// Everything measured, for the table and for the smoke test's checks.
#[derive(Default)]
pub(crate) struct Results {
    pub(crate) rows: Vec<Row>,
    pub(crate) authorize_p99: Duration,
    pub(crate) wakes: Vec<(String, watch::Wake)>,
    pub(crate) peak_mib: f64,
}

impl Results {
    fn row(&mut self, measure: impl Into<String>, value: impl Into<String>, target: &'static str) {
        let (measure, value) = (measure.into(), value.into());
        eprintln!("{measure}: {value}");
        self.rows.push(Row {
            measure,
            value,
            target,
        });
    }

    fn mem(&mut self, phase: &str, t: &Target) {
        let m: Mem = t.mem();
        self.peak_mib = self.peak_mib.max(m.hwm);
        let whose = if t.separate() { "sim" } else { "sim + client" };
        let mut value = format!("VmRSS {:.0} MiB, VmHWM {:.0} MiB", m.rss, m.hwm);
        if t.separate() {
            let c = target::own_mem();
            value.push_str(&format!(" (client: VmRSS {:.0} MiB)", c.rss));
        }
        self.row(format!("memory ({whose}) after {phase}"), value, "< 1 GiB");
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    if args.serve {
        return rt.block_on(target::serve());
    }
    let fds = target::raise_fd_limit();
    let results = rt.block_on(run(&args))?;
    println!("# agent-sim at scale\n");
    println!(
        "{} services with sidecars, {} intentions (+{} legacy), {} watchers; {} cores; open-file limit {fds}\n",
        args.services,
        args.intentions,
        args.legacy,
        args.watchers,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("| measure | result | target |\n|---|---|---|");
    for r in &results.rows {
        println!("| {} | {} | {} |", r.measure, r.value, r.target);
    }
    Ok(())
}

/// Runs every phase against a fresh sim.
pub(crate) async fn run(args: &Args) -> anyhow::Result<Results> {
    let target = Target::start(args.in_process).await?;
    let out = phases(args, &target).await;
    target.stop().await;
    out
}

async fn phases(args: &Args, t: &Target) -> anyhow::Result<Results> {
    // reqwest may be built with `rustls-no-provider` (the reference proxy's feature, unified in a
    // workspace build): it then needs a process-wide provider, even for plain HTTP.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(usize::MAX)
        .tcp_nodelay(true)
        .build()?;
    let base = t.base.as_str();
    let mut r = Results::default();
    r.mem("start", t);

    let (seq, conc) = load::register(&http, base, args.services, args.concurrency).await?;
    r.row(
        "registrations (service + sidecar), sequential",
        format!("{seq:.0} regs/s"),
        "-",
    );
    r.row(
        format!("registrations, {} concurrent connections", args.concurrency),
        format!("{conc:.0} regs/s"),
        "-",
    );
    r.mem("registrations", t);

    let w = load::intentions(
        &http,
        base,
        args.services,
        args.intentions,
        args.legacy,
        args.concurrency,
    )
    .await?;
    r.row(
        format!(
            "intentions written: {} in {} config entries",
            w.intentions, w.entries
        ),
        format!(
            "{:.0} entries/s = {:.0} intentions/s",
            w.entries_per_s, w.intentions_per_s
        ),
        "-",
    );
    r.row(
        format!("legacy intention creates ({})", w.legacy),
        format!("{:.0} /s", w.legacy_per_s),
        "-",
    );
    r.mem("intentions", t);

    let quarter = (args.samples / 4).max(1);
    let floor = latency::floor(&http, base, quarter).await?;
    r.row(
        "client + HTTP floor: `GET /v1/status/leader`",
        floor.cells(),
        "-",
    );
    let a = latency::authorize(&http, base, args.services, args.samples).await?;
    r.authorize_p99 = a.latency.p99;
    r.row(
        format!("`POST /v1/agent/connect/authorize` ({} allowed)", a.allowed),
        a.latency.cells(),
        "p99 < 1 ms",
    );
    let m = latency::matches(&http, base, "destination", args.services, quarter).await?;
    r.row(
        "`GET /v1/connect/intentions/match?by=destination`",
        m.cells(),
        "-",
    );
    let m = latency::matches(&http, base, "source", args.services, quarter / 4).await?;
    r.row(
        "`GET /v1/connect/intentions/match?by=source`",
        m.cells(),
        "-",
    );
    r.mem("latency", t);

    let plan = watch::plan(args.watchers, args.services, args.upstreams);
    let (mut ws, took) = Watchers::start(&http, base, plan).await?;
    r.row(
        format!("{} watchers all blocked after", args.watchers),
        format!("{:.2} s", took.as_secs_f64()),
        "-",
    );
    r.mem("watchers blocked", t);
    wakes(args, &http, base, &mut ws, &mut r).await?;
    ws.stop();
    r.mem("wake-ups", t);
    Ok(r)
}

/// The wake-up writes: one that concerns no watcher, then one per kind.
async fn wakes(
    args: &Args,
    http: &reqwest::Client,
    base: &str,
    ws: &mut Watchers,
    r: &mut Results,
) -> anyhow::Result<()> {
    let register = |body: serde_json::Value| {
        let req = http
            .put(format!("{base}/v1/agent/service/register"))
            .json(&body);
        async move { load::send(req).await.map(drop) }
    };
    let none = ws
        .wake(
            |_| false,
            args.quiet,
            register(json!({"Name": "unrelated", "Port": 1})),
        )
        .await?;
    r.row(
        "write concerning no watcher (an unrelated service registered): watchers answering",
        format!("{} (errors {})", none.spurious, none.errors),
        "0",
    );
    r.wakes.push(("none".into(), none));

    let star = json!({"Kind": "service-intentions", "Name": "*",
                      "Sources": load::star_sources(args.services, Some("newcomer"))});
    let req = http.put(format!("{base}/v1/config")).json(&star);
    let wake = ws
        .wake(|w| w.kind == Kind::Match, args.quiet, async move {
            load::send(req).await.map(drop)
        })
        .await?;
    report(r, "an intention to `*` written: every match watcher", &wake);
    r.wakes.push(("match".into(), wake));

    let up = load::service(0);
    let proxy = json!({"Kind": "connect-proxy", "Name": format!("{up}-sidecar-proxy"),
                       "ID": format!("{up}-sidecar-proxy-2"), "Port": 19999,
                       "Proxy": {"DestinationServiceName": up}});
    let wake = ws
        .wake(
            |w| w.kind == Kind::Health && w.service == 0,
            args.quiet,
            register(proxy),
        )
        .await?;
    report(
        r,
        "a second sidecar for upstream 0: its health watchers",
        &wake,
    );
    r.wakes.push(("health".into(), wake));

    let req = http.post(format!("{base}/_sim/ca/rotate")).json(&json!({}));
    let wake = ws
        .wake(|w| w.kind == Kind::Leaf, args.quiet, async move {
            load::send(req).await.map(drop)
        })
        .await?;
    report(r, "CA rotated: every leaf watcher", &wake);
    r.wakes.push(("leaf".into(), wake));
    Ok(())
}

fn report(r: &mut Results, what: &str, w: &watch::Wake) {
    r.row(
        format!("{what} ({} concerned): last answer after", w.expected),
        match w.last {
            Some(d) if w.answered == w.expected => ms(d),
            _ => format!("only {} of {} answered", w.answered, w.expected),
        },
        "< 1 s",
    );
    r.row(
        format!("{what}: spurious answers"),
        format!("{} (errors {})", w.spurious, w.errors),
        "0",
    );
}
