//! One trial per scenario against the bundled reference proxy; each must pass. A failing
//! trial prints the failed checks (expected, observed, when) and the proxy's output tail.

mod support;

use libtest_mimic::{Arguments, Failed, Trial};
use reports::Verdict;

fn main() {
    let args = Arguments::from_args();
    let trials = support::scenarios()
        .into_iter()
        .map(|s| {
            let kind = format!("{:?}", s.profile).to_lowercase();
            Trial::test(s.id.clone(), move || {
                let (result, verdict) = support::run(&support::config(""), &s);
                if verdict == Verdict::Pass {
                    Ok(())
                } else {
                    Err(Failed::from(support::explain(&result, verdict)))
                }
            })
            .with_kind(kind)
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
