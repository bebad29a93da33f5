//! Property tests for the indexed intention lookup: `matching` (destination by key lookup,
//! source by filtered scan) returns exactly what a scan over every intention returns, and the
//! borrowed-key sort orders like the owned tuple it replaced.

use std::cmp::Ordering;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::model::config_entry::{ConfigEntries, decode_entry};

const NAMES: [&str; 5] = ["a", "b", "c", "d", "*"];

/// One source: a name, an action, and sometimes a peer.
fn source() -> impl Strategy<Value = Value> {
    (
        0..NAMES.len(),
        any::<bool>(),
        prop::option::weighted(0.2, 0..2usize),
    )
        .prop_map(|(n, allow, peer)| {
            let mut s = json!({"Name": NAMES[n], "Action": if allow { "allow" } else { "deny" }});
            if let Some(p) = peer {
                s["Peer"] = json!(format!("peer{p}"));
            }
            s
        })
}

/// Entries for random destinations (invalid ones, e.g. repeated sources, are skipped).
fn entries() -> impl Strategy<Value = ConfigEntries> {
    prop::collection::vec(
        (0..NAMES.len(), prop::collection::vec(source(), 1..5)),
        0..8,
    )
    .prop_map(|es| {
        let mut store = ConfigEntries::new();
        for (i, (dest, sources)) in es.into_iter().enumerate() {
            let v = json!({"Kind": "service-intentions", "Name": NAMES[dest], "Sources": sources});
            if let Ok(entry) = decode_entry(v.to_string().as_bytes()) {
                let _ = store.upsert(entry, None, 10 + i as u64);
            }
        }
        store
    })
}

proptest! {
    #[test]
    fn lookup_matches_scan(store in entries()) {
        for name in NAMES.iter().copied().chain(["zzz"]) {
            for by in [MatchBy::Destination, MatchBy::Source] {
                prop_assert_eq!(
                    matching(&store, by, name),
                    matching_by_scan(&store, by, name),
                    "by {:?} name {}", by, name
                );
            }
        }
    }

    #[test]
    fn borrowed_sort_orders_like_owned_tuple(store in entries()) {
        let mut fast = all_intentions(&store);
        let mut owned = fast.clone();
        sort_intentions(&mut fast);
        owned.sort_by(|a, b| {
            let key = |i: &Intention| {
                (
                    i.source_sameness_group.clone(),
                    i.source_peer.clone(),
                    i.source_partition.clone(),
                    i.source_ns.clone(),
                    i.source_name.clone(),
                    i.destination_partition.clone(),
                    i.destination_ns.clone(),
                    i.destination_name.clone(),
                )
            };
            match b.precedence.cmp(&a.precedence) {
                Ordering::Equal => key(a).cmp(&key(b)),
                other => other,
            }
        });
        prop_assert_eq!(fast, owned);
    }
}

/// The generator is not vacuous: it produces stores where the lookup finds something.
#[test]
fn generator_produces_matches() {
    let mut store = ConfigEntries::new();
    let v = json!({"Kind": "service-intentions", "Name": "a", "Sources": [{"Name": "b", "Action": "allow"}]});
    store
        .upsert(decode_entry(v.to_string().as_bytes()).unwrap(), None, 1)
        .unwrap();
    assert_eq!(matching(&store, MatchBy::Destination, "a").len(), 1);
    assert_eq!(matching(&store, MatchBy::Source, "b").len(), 1);
}

proptest! {
    /// The match answer written straight from the intentions is byte for byte the Go
    /// serialization of the `Value` answer.
    #[test]
    fn match_compact_is_match_json_serialized(
        store in entries(),
        names in prop::collection::vec(0..NAMES.len(), 0..4),
        by_source in any::<bool>(),
    ) {
        let by = if by_source { MatchBy::Source } else { MatchBy::Destination };
        let names: Vec<String> = names.into_iter().map(|n| NAMES[n].to_owned()).collect();
        prop_assert_eq!(
            String::from_utf8(match_compact(&store, by, &names)).unwrap(),
            String::from_utf8(crate::go::gojson::compact(&match_json(&store, by, &names))).unwrap()
        );
    }
}

#[test]
fn match_compact_escapes_and_dedups_names_like_match_json() {
    let mut store = ConfigEntries::new();
    let v = json!({"Kind": "service-intentions", "Name": "db", "Sources": [
        {"Name": "web", "Action": "allow", "Description": "<a & b>\u{2028}"}
    ]});
    let entry = decode_entry(v.to_string().as_bytes()).unwrap();
    store.upsert(entry, None, 5).unwrap();
    let names: Vec<String> = ["default/db", "db", "x<y>&", "db", "a/b/c/d"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    for by in [MatchBy::Destination, MatchBy::Source] {
        assert_eq!(
            match_compact(&store, by, &names),
            crate::go::gojson::compact(&match_json(&store, by, &names))
        );
    }
}
