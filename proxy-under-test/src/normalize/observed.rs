//! The deterministic table of the abuse pass: every raw path of `envoy_observed.tsv` (bypass
//! shapes: encoded letters, dot segments in every spelling, `;` parameters, duplicate slashes,
//! escaped slashes and backslashes, broken escapes), under each `mesh` entry setting, must get
//! exactly the outcome Envoy 1.40 gave it, and no path that Envoy refused as `/admin` may come
//! out anywhere else.

use super::{EscapedSlashes, PathAction, PathNormalization};

const TABLE: &str = include_str!("envoy_observed.tsv");

fn mode(name: &str) -> PathNormalization {
    let mut n = PathNormalization::default();
    match name {
        "default" => {}
        "merge" => n.merge_slashes = true,
        "fwd" => n.escaped_slashes = EscapedSlashes::UnescapeAndForward,
        "rej" => n.escaped_slashes = EscapedSlashes::RejectRequest,
        "redir" => n.escaped_slashes = EscapedSlashes::UnescapeAndRedirect,
        "off" => n.normalize_path = false,
        other => panic!("unknown mode {other:?} in envoy_observed.tsv"),
    }
    n
}

#[test]
fn every_path_envoy_was_observed_on_gets_envoys_outcome() {
    let mut checked = 0;
    let mut denied = 0;
    for (no, line) in TABLE.lines().enumerate() {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let [m, outcome, raw, path] = f[..] else {
            panic!("envoy_observed.tsv:{}: want 4 tab-separated fields", no + 1);
        };
        let want = match outcome {
            "F" => PathAction::Forward(path.to_owned()),
            "R" => PathAction::Redirect(path.to_owned()),
            "X" => PathAction::Reject(""),
            other => panic!("envoy_observed.tsv:{}: outcome {other:?}", no + 1),
        };
        let got = mode(m).apply(raw);
        match (&got, &want) {
            (PathAction::Reject(_), PathAction::Reject(_)) => {}
            _ => assert_eq!(got, want, "{m} {raw:?} (envoy_observed.tsv:{})", no + 1),
        }
        if path.starts_with("/admin") && outcome == "F" {
            denied += 1;
        }
        checked += 1;
    }
    assert!(checked >= 900, "only {checked} observations read");
    assert!(denied >= 100, "only {denied} /admin spellings in the table");
}
