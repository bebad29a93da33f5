//! Property tests: random interleavings of resource-set changes, ACKs, NACKs and subscription
//! changes against a model client keep the protocol's invariants.

use std::collections::{BTreeMap, BTreeSet};

use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse,
};
use envoy_types::pb::google::rpc::Status;
use proptest::prelude::*;

use super::tests::{ack, res, sub};
use super::*;

const TYPES: [&str; 4] = [CLUSTER, ENDPOINT, LISTENER, SECRET];
const NAMES: [&str; 4] = ["a", "b", "c", "d"];

#[derive(Debug, Clone)]
enum Op {
    /// A new resource set: per (type, name) an optional version.
    Set(Vec<Option<u8>>),
    /// The client answers the oldest response it has not answered (ACK, or NACK when true).
    Answer(bool),
    /// Subscribe (true) or unsubscribe a name of an explicit type (ENDPOINT or SECRET).
    Sub(bool, usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => proptest::collection::vec(proptest::option::of(0u8..3), TYPES.len() * NAMES.len())
            .prop_map(Op::Set),
        5 => any::<bool>().prop_map(Op::Answer),
        2 => (any::<bool>(), 0usize..2, 0usize..NAMES.len()).prop_map(|(s, t, n)| Op::Sub(s, t, n)),
    ]
}

fn build(versions: &[Option<u8>], generation: u32) -> Resources {
    let mut r = Resources::default();
    for (i, v) in versions.iter().enumerate() {
        if let Some(v) = v {
            let t = TYPES[i / NAMES.len()];
            let n = NAMES[i % NAMES.len()];
            r.insert(t, res(t, n, &format!("{v}-{generation}")));
        }
    }
    r
}

/// The client: what it holds per type, and the responses it has not answered yet.
#[derive(Default)]
struct Client {
    view: BTreeMap<String, BTreeMap<String, String>>,
    unanswered: Vec<DeltaDiscoveryResponse>,
}

impl Client {
    fn receive(
        &mut self,
        out: Vec<DeltaDiscoveryResponse>,
        s: &DeltaStream,
    ) -> Result<(), TestCaseError> {
        // Within one round, responses follow Consul's order (upsert steps, then removal steps).
        let steps: Vec<usize> = out.iter().map(step_of).collect::<Result<_, _>>()?;
        prop_assert!(steps.windows(2).all(|w| w[0] < w[1]), "order {steps:?}");
        for r in out {
            // Never two responses of one type in flight.
            prop_assert!(
                !self.unanswered.iter().any(|u| u.type_url == r.type_url),
                "second {} response in flight",
                r.type_url
            );
            // Listeners never go out while clusters or endpoints are unanswered.
            if r.type_url == LISTENER || r.type_url == ROUTE {
                prop_assert!(
                    !self
                        .unanswered
                        .iter()
                        .any(|u| u.type_url == CLUSTER || u.type_url == ENDPOINT),
                    "listener sent while CDS/EDS in flight"
                );
            }
            // Removals only of what the client has.
            let have = self.view.get(&r.type_url).cloned().unwrap_or_default();
            for name in &r.removed_resources {
                prop_assert!(
                    have.contains_key(name),
                    "removal of {name} the client never had"
                );
            }
            let _ = s;
            self.unanswered.push(r);
        }
        Ok(())
    }

    fn answer(&mut self, nack: bool) -> Option<DeltaDiscoveryRequest> {
        if self.unanswered.is_empty() {
            return None;
        }
        let r = self.unanswered.remove(0);
        if nack {
            return Some(DeltaDiscoveryRequest {
                error_detail: Some(Status {
                    code: 13,
                    message: "rejected".into(),
                    details: vec![],
                }),
                ..ack(&r)
            });
        }
        let view = self.view.entry(r.type_url.clone()).or_default();
        for name in &r.removed_resources {
            view.remove(name);
        }
        for x in &r.resources {
            view.insert(x.name.clone(), x.version.clone());
        }
        Some(ack(&r))
    }
}

/// The index in [`UPDATE_ORDER`] of the step that produced `r`.
fn step_of(r: &DeltaDiscoveryResponse) -> Result<usize, TestCaseError> {
    let removal = !r.removed_resources.is_empty();
    if removal && !r.resources.is_empty() && r.type_url != LISTENER && r.type_url != ROUTE {
        return Err(TestCaseError::fail(format!(
            "{} upserts and removals in one response",
            r.type_url
        )));
    }
    UPDATE_ORDER
        .iter()
        .position(|(t, up, rm)| {
            *t == r.type_url
                && if *up && *rm {
                    true
                } else if removal {
                    *rm
                } else {
                    *up
                }
        })
        .ok_or_else(|| TestCaseError::fail(format!("unknown step for {}", r.type_url)))
}

fn step(
    s: &mut DeltaStream,
    c: &mut Client,
    req: &DeltaDiscoveryRequest,
) -> Result<(), TestCaseError> {
    let got = s
        .recv(req)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    if got.triggers_send() {
        let out = s.poll();
        c.receive(out, s)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn interleavings_keep_the_invariants(ops in proptest::collection::vec(op(), 1..60)) {
        let mut s = DeltaStream::new();
        let mut c = Client::default();
        // CDS and LDS wildcard, EDS and SDS explicit (as Envoy does).
        step(&mut s, &mut c, &sub(CLUSTER, &[]))?;
        step(&mut s, &mut c, &sub(LISTENER, &[]))?;
        step(&mut s, &mut c, &sub(ENDPOINT, &["a"]))?;
        step(&mut s, &mut c, &sub(SECRET, &["a"]))?;
        let explicit = [ENDPOINT, SECRET];
        let mut generation = 0;
        let mut last = vec![None; TYPES.len() * NAMES.len()];
        for o in ops {
            match o {
                Op::Set(v) => {
                    generation += 1;
                    last = v.clone();
                    s.set_resources(build(&v, generation));
                    let out = s.poll();
                    c.receive(out, &s)?;
                }
                Op::Answer(nack) => {
                    if let Some(req) = c.answer(nack) {
                        step(&mut s, &mut c, &req)?;
                    }
                }
                Op::Sub(on, t, n) => {
                    let mut req = sub(explicit[t], &[]);
                    if on {
                        req.resource_names_subscribe = vec![NAMES[n].to_owned()];
                    } else {
                        req.resource_names_unsubscribe = vec![NAMES[n].to_owned()];
                        // The client forgets what it unsubscribed from.
                        if let Some(v) = c.view.get_mut(explicit[t]) {
                            v.remove(NAMES[n]);
                        }
                    }
                    step(&mut s, &mut c, &req)?;
                }
            }
        }
        // Quiesce: one more change (earlier NACKs stop suppressing), then ACK everything.
        generation += 1;
        let final_set = build(&last, generation);
        s.set_resources(final_set.clone());
        let out = s.poll();
        c.receive(out, &s)?;
        let mut rounds = 0;
        while let Some(req) = c.answer(false) {
            step(&mut s, &mut c, &req)?;
            rounds += 1;
            prop_assert!(rounds < 100, "no quiescence");
        }
        prop_assert!(s.in_flight().is_empty());
        for t in TYPES {
            let want: BTreeMap<String, String> = final_set
                .of(t)
                .map(|r| (r.name.clone(), r.version.clone()))
                .collect();
            let have = c.view.get(t).cloned().unwrap_or_default();
            if s.is_wildcard(t) == Some(true) {
                if !want.is_empty() {
                    prop_assert_eq!(&have, &want, "wildcard {} view", t);
                }
            } else {
                let subs: BTreeSet<String> = s.subscriptions(t);
                for name in subs {
                    if let Some(v) = want.get(&name) {
                        prop_assert_eq!(have.get(&name), Some(v), "explicit {} {}", t, name);
                    }
                }
            }
        }
    }
}
