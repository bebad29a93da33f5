//! Expansion of generated scenarios: `random-intentions` becomes concrete steps, seeded, with
//! every probe's expected outcome computed by an independent precedence model.

mod precedence;
mod prng;

use crate::model::{
    Check, Expectation, Generator, Identity, InboundVia, IntentionSpec, Outcome, Policy,
    Requirement, Scenario, Step,
};
use crate::validate::{MARKER_SOURCE, MAX_CASES};

use self::precedence::{Rule, decide, matching, outcome};
use self::prng::SplitMix64;

/// Turns a generated scenario into a concrete one for `seed` (the same seed gives the same steps
/// on every platform); a scenario without `generate` is returned unchanged.
///
/// `random-intentions`: the setup gets the marker intention `precedence-marker -> db deny`, then
/// each case
/// 1. deletes the previous case's intentions that it does not rewrite,
/// 2. puts a random set over (each source or `*`) x (`db` or `*`), allow or deny, in random order,
///    with at least one source matched by intentions of different precedence and opposite action,
/// 3. flips the marker's intention (allow on even cases, deny on odd ones) and expects the marker
///    to show it within `propagation` (so every write of the case has arrived),
/// 4. expects an inbound probe per source, at once, with the model's outcome (the setup's
///    `default_intention_policy`, else its ACL default, else deny, when nothing matches).
pub fn expand(s: &Scenario, seed: u64) -> Scenario {
    let Some(Generator::RandomIntentions { cases, sources }) = &s.generate else {
        return s.clone();
    };
    let mut out = s.clone();
    out.generate = None;
    out.description = format!("{} (expanded with seed {seed})", s.description.trim_end());
    let default = s
        .setup
        .default_intention_policy
        .or(s.setup.acl_default_policy)
        .unwrap_or(Policy::Deny);
    out.setup
        .intentions
        .push(intention(MARKER_SOURCE, "db", Policy::Deny));

    let mut rng = SplitMix64::new(seed);
    let mut previous: Vec<Rule> = Vec::new();
    // An unvalidated scenario cannot make it run away: validation allows at most MAX_CASES.
    for case in 0..(*cases).min(MAX_CASES) {
        let rules = random_case(&mut rng, sources);
        for old in &previous {
            let rewritten = rules
                .iter()
                .any(|r| r.source == old.source && r.destination == old.destination);
            if !rewritten {
                out.steps.push(Step::DeleteIntention {
                    source: old.source.clone(),
                    destination: old.destination.clone(),
                });
            }
        }
        for r in &rules {
            out.steps.push(Step::Intention(intention(
                &r.source,
                &r.destination,
                r.action,
            )));
        }
        let marker = if case % 2 == 0 {
            Policy::Allow
        } else {
            Policy::Deny
        };
        out.steps
            .push(Step::Intention(intention(MARKER_SOURCE, "db", marker)));
        out.steps.push(expect(
            format!(
                "case {case}: marker {} (every write of the case has arrived)",
                word(outcome(marker))
            ),
            MARKER_SOURCE,
            outcome(marker),
            Some("propagation"),
        ));
        for src in sources {
            let d = decide(&rules, src, "db", default);
            out.steps.push(expect(
                format!("case {case}: {src} {} ({})", word(d.outcome), d.reason),
                src,
                d.outcome,
                None,
            ));
        }
        previous = rules;
    }
    out
}

/// One case's intentions; retried until some source's highest- and lowest-precedence matches
/// disagree (so evaluation order matters), with a fixed fallback so it always ends.
fn random_case(rng: &mut SplitMix64, sources: &[String]) -> Vec<Rule> {
    for _ in 0..64 {
        let mut rules = Vec::new();
        for src in sources.iter().map(String::as_str).chain(["*"]) {
            for dst in ["db", "*"] {
                if rng.coin() {
                    let action = if rng.coin() {
                        Policy::Allow
                    } else {
                        Policy::Deny
                    };
                    rules.push(Rule::new(src, dst, action));
                }
            }
        }
        rng.shuffle(&mut rules);
        if order_matters(&rules, sources) {
            return rules;
        }
    }
    let first = sources.first().map_or("web", String::as_str);
    vec![
        Rule::new(first, "db", Policy::Allow),
        Rule::new("*", "*", Policy::Deny),
    ]
}

/// Whether some source's decision changes when the lowest-precedence match is taken instead of
/// the highest.
pub(crate) fn order_matters(rules: &[Rule], sources: &[String]) -> bool {
    sources.iter().any(|s| {
        let m = matching(rules, s, "db");
        match (m.first(), m.last()) {
            (Some(hi), Some(lo)) => hi.action != lo.action,
            _ => false,
        }
    })
}

fn intention(source: &str, destination: &str, action: Policy) -> IntentionSpec {
    IntentionSpec {
        source: source.to_owned(),
        destination: destination.to_owned(),
        action: Some(action),
        permissions: None,
    }
}

fn expect(name: String, service: &str, outcome: Outcome, within: Option<&str>) -> Step {
    Step::Expect(Expectation {
        name,
        check: Check::Inbound {
            identity: Identity::Service {
                service: service.to_owned(),
            },
            outcome,
            via: InboundVia::PublicListener,
        },
        within: within.map(str::to_owned),
        stable_for: None,
        requirement: Requirement::Must,
    })
}

fn word(o: Outcome) -> &'static str {
    match o {
        Outcome::Allowed => "allowed",
        Outcome::Refused => "refused",
    }
}

#[cfg(test)]
mod tests;
