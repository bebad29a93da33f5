//! The durations table: the checked-in one covers the catalogue, tables round-trip through
//! TOML, and reports yield the durations of the scenarios they ran.

use super::*;

#[test]
fn the_recorded_table_parses_and_covers_the_catalogue() {
    let table = Durations::recorded().unwrap();
    let ids: Vec<String> = crate::plan::catalogue::builtin()
        .into_iter()
        .map(|s| s.id)
        .collect();
    let missing: Vec<&String> = ids.iter().filter(|id| !table.0.contains_key(*id)).collect();
    let stale: Vec<&String> = table.0.keys().filter(|id| !ids.contains(id)).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "scenarios/catalogue/durations.toml is out of date (regenerate it, see its header): \
         missing {missing:?}, no such scenario {stale:?}"
    );
}

#[test]
fn durations_round_trip_and_come_from_reports() {
    let mut d = Durations::default();
    d.0.insert("l4-allow-deny".into(), 1200);
    d.0.insert("odd id".into(), 7);
    assert_eq!(Durations::parse("t", &d.to_toml()).unwrap(), d);
    assert_eq!(d.median(), 603);
    assert_eq!(Durations::default().median(), FALLBACK_MS);
    assert!(Durations::parse("t", "x = \"slow\"").is_err());

    let report = reports::fixture::sample_report();
    let from = Durations::from_report(&report);
    for s in &report.scenarios {
        let kept =
            !matches!(s.verdict, Verdict::Skipped | Verdict::NotSupported) && s.duration_ms > 0;
        assert_eq!(from.0.contains_key(&s.id), kept, "{}", s.id);
    }
    let mut both = from.clone();
    both.extend(Durations([("ca-rotation".to_owned(), u64::MAX)].into()));
    assert_eq!(both.0.get("ca-rotation"), Some(&u64::MAX), "the longer one");
}
