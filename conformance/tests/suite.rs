//! One trial per scenario against the bundled reference proxy; each must pass. A failing
//! trial prints the failed checks (expected, observed, when) and the proxy's output tail.
//! Transparent-mode trials are ignored (not passed) on a machine that cannot run them, unless
//! `CONFORMANCE_REQUIRE_NETNS=1` (CI sets it) makes that a failure. Trials of scenarios needing
//! a feature the reference proxy does not implement yet (`manifest::REFERENCE_PENDING`, e.g.
//! `l7-traffic`) are ignored, never passed.

mod support;

use libtest_mimic::{Arguments, Failed, Trial};
use reports::Verdict;

fn main() {
    let mut args = Arguments::from_args();
    support::default_threads(&mut args);
    let trials = support::scenarios()
        .into_iter()
        .map(|s| {
            let kind = format!("{:?}", s.profile).to_lowercase();
            let pending = s
                .features
                .iter()
                .any(|f| conformance::manifest::REFERENCE_PENDING.contains(&f.as_str()));
            let ignored = support::skip_here(&s) || pending;
            Trial::test(s.id.clone(), move || {
                if let Some(why) = support::unsupported_here(&s) {
                    return Err(Failed::from(why));
                }
                let (result, verdict) = support::run(&support::config(""), &s);
                if verdict == Verdict::Pass {
                    Ok(())
                } else {
                    Err(Failed::from(support::explain(&result, verdict)))
                }
            })
            .with_kind(kind)
            .with_ignored_flag(ignored)
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
