//! Path normalization: Envoy's outcomes for the bypass shapes of CVE-2024-10005, each
//! `RequestNormalization` option, and properties (idempotent, no dot segment survives, the same
//! as RFC 3986 `remove_dot_segments` after decoding unreserved escapes).

use proptest::prelude::*;

use super::{EscapedSlashes, PathAction, PathNormalization};

fn fwd(p: &str) -> PathAction {
    PathAction::Forward(p.to_owned())
}

fn defaults(p: &str) -> PathAction {
    PathNormalization::default().apply(p)
}

#[test]
fn the_bypass_shapes_all_become_the_path_they_stand_for() {
    for raw in [
        "/admin",
        "/%61dmin",
        "/%61%64%6D%69%6e",
        "/./admin",
        "/x/../admin",
        "/x/%2e%2e/admin",
        "/x/%2E%2e/admin",
        "/%2e/admin",
        "/x/y/../../admin",
        "/../admin",
        "/../../admin",
        "\\admin",
        "/x\\..\\admin",
        "admin",
    ] {
        assert_eq!(defaults(raw), fwd("/admin"), "{raw}");
    }
}

#[test]
fn dot_segments_with_path_parameters_are_dot_segments() {
    // As Envoy 1.40 forwards them (observed through agent-sim's xDS).
    assert_eq!(defaults("/x/..;/admin"), fwd("/admin"));
    assert_eq!(defaults("/x/..;p=1/admin"), fwd("/admin"));
    assert_eq!(defaults("/y/.;/z"), fwd("/y/z"));
    assert_eq!(defaults("/y/..;"), fwd("/"));
    assert_eq!(defaults("/y/.;"), fwd("/y/"));
    assert_eq!(defaults("/y/..;x\\z"), fwd("/"));
    assert_eq!(defaults("/y/..;/..;/z"), fwd("/z"));
    assert_eq!(defaults("/y/..;../z"), fwd("/z"));
    // Escaped dots, longer runs and other segments keep their `;`.
    assert_eq!(defaults("/y/%2e%2e;/z"), fwd("/y/..;/z"));
    assert_eq!(defaults("/y/.%2e;x/z"), fwd("/y/..;x/z"));
    assert_eq!(defaults("/y/...;/z"), fwd("/y/...;/z"));
    assert_eq!(defaults("/y;/z/;/x..;"), fwd("/y;/z/;/x..;"));
    assert_eq!(defaults("/y/..;?q=/..;"), fwd("/?q=/..;"));
}

#[test]
fn dots_that_name_nothing_stay() {
    assert_eq!(defaults("/a/.b/..c/d."), fwd("/a/.b/..c/d."));
    assert_eq!(defaults("/a/..."), fwd("/a/..."));
}

#[test]
fn trailing_dot_segments_leave_a_trailing_slash() {
    assert_eq!(defaults("/a/."), fwd("/a/"));
    assert_eq!(defaults("/a/b/.."), fwd("/a/"));
    assert_eq!(defaults("/a/.."), fwd("/"));
    assert_eq!(defaults("/.."), fwd("/"));
    assert_eq!(defaults(""), fwd("/"));
}

#[test]
fn escapes_of_unreserved_characters_are_decoded_others_kept_as_written() {
    assert_eq!(defaults("/%7euser/%2D%5f"), fwd("/~user/-_"));
    assert_eq!(defaults("/a%2fb/c%2Fd"), fwd("/a%2fb/c%2Fd"));
    assert_eq!(defaults("/a%3bb%20c"), fwd("/a%3bb%20c"));
    // A lone or broken % passes through.
    assert_eq!(defaults("/100%/%zz/%4"), fwd("/100%/%zz/%4"));
}

#[test]
fn characters_that_may_not_stand_in_a_path_are_escaped_uppercase() {
    assert_eq!(
        defaults("/a b\"<>^`{|}"),
        fwd("/a%20b%22%3C%3E%5E%60%7B%7C%7D")
    );
    assert_eq!(defaults("/caf\u{e9}"), fwd("/caf%C3%A9"));
}

#[test]
fn a_nul_raw_or_escaped_is_rejected() {
    assert!(matches!(defaults("/a%00b"), PathAction::Reject(_)));
    assert!(matches!(defaults("/a\0b"), PathAction::Reject(_)));
}

#[test]
fn a_fragment_is_rejected() {
    assert!(matches!(defaults("/admin#x"), PathAction::Reject(_)));
}

#[test]
fn the_query_is_kept_untouched() {
    assert_eq!(defaults("/./a/../b?x=/../y&%61=1"), fwd("/b?x=/../y&%61=1"));
    assert_eq!(defaults("/b?"), fwd("/b?"));
}

#[test]
fn nested_escapes_cannot_turn_into_a_new_escape() {
    assert_eq!(defaults("/%%30%30"), fwd("/%2500"));
    assert_eq!(defaults("/%%32%65"), fwd("/%252e"));
}

#[test]
fn insecure_disable_path_normalization_forwards_the_raw_path() {
    let off = PathNormalization {
        normalize_path: false,
        ..Default::default()
    };
    for raw in ["/%61dmin", "/./admin", "/x/../admin", "/a//b"] {
        assert_eq!(off.apply(raw), fwd(raw));
    }
}

#[test]
fn merge_slashes_merges_after_normalizing() {
    let merge = PathNormalization {
        merge_slashes: true,
        ..Default::default()
    };
    assert_eq!(defaults("//admin//x"), fwd("//admin//x"));
    assert_eq!(merge.apply("//admin//x"), fwd("/admin/x"));
    assert_eq!(merge.apply("/a///b/?q=//"), fwd("/a/b/?q=//"));
    assert_eq!(merge.apply("/a/b"), fwd("/a/b"));
}

#[test]
fn escaped_slash_actions() {
    let with = |escaped_slashes| PathNormalization {
        escaped_slashes,
        ..Default::default()
    };
    let raw = "/x%2F..%2fadmin%5Cy";
    assert_eq!(defaults(raw), fwd("/x%2F..%2fadmin%5Cy"));
    assert!(matches!(
        with(EscapedSlashes::RejectRequest).apply(raw),
        PathAction::Reject(_)
    ));
    assert_eq!(
        with(EscapedSlashes::UnescapeAndForward).apply(raw),
        fwd("/admin/y")
    );
    assert_eq!(
        with(EscapedSlashes::UnescapeAndRedirect).apply(raw),
        PathAction::Redirect("/admin/y".into())
    );
    // Without an escaped slash nothing is rejected or redirected.
    assert_eq!(with(EscapedSlashes::RejectRequest).apply("/./a"), fwd("/a"));
    assert_eq!(
        with(EscapedSlashes::UnescapeAndRedirect).apply("/./a"),
        fwd("/a")
    );
}

/// RFC 3986 section 5.2.4, literally.
fn remove_dot_segments(mut input: &str) -> String {
    let mut out = String::new();
    while !input.is_empty() {
        if let Some(rest) = input.strip_prefix("../") {
            input = rest;
        } else if let Some(rest) = input.strip_prefix("./") {
            input = rest;
        } else if input.starts_with("/./") {
            input = &input[2..];
        } else if input == "/." {
            input = "/";
        } else if input.starts_with("/../") || input == "/.." {
            input = if input == "/.." { "/" } else { &input[3..] };
            match out.rfind('/') {
                Some(i) => out.truncate(i),
                None => out.clear(),
            }
        } else if input == "." || input == ".." {
            input = "";
        } else {
            let start = usize::from(input.starts_with('/'));
            let end = input[start..].find('/').map_or(input.len(), |i| i + start);
            out.push_str(&input[..end]);
            input = &input[end..];
        }
    }
    out
}

fn path_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just("/"),
            Just("."),
            Just(".."),
            Just("a"),
            Just("b"),
            Just("%2e"),
            Just("%2E"),
            Just("%61"),
        ],
        0..12,
    )
    .prop_map(|parts| format!("/{}", parts.concat()))
}

fn any_path() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just("/"),
            Just("."),
            Just("\\"),
            Just("%"),
            Just("%2e"),
            Just("%2f"),
            Just("%30"),
            Just("%41"),
            Just("%7E"),
            Just("a"),
            Just(" "),
            Just("{"),
            Just("~"),
        ],
        0..14,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #[test]
    fn canonical_equals_rfc3986_after_decoding_unreserved(raw in path_strategy()) {
        let decoded = raw.replace("%2e", ".").replace("%2E", ".").replace("%61", "a");
        let mut want = remove_dot_segments(&decoded);
        if want.is_empty() {
            want.push('/');
        }
        prop_assert_eq!(defaults(&raw), fwd(&want));
    }

    #[test]
    fn normalizing_twice_changes_nothing(raw in any_path()) {
        if let PathAction::Forward(once) = defaults(&raw) {
            prop_assert_eq!(defaults(&once), fwd(&once));
        }
    }

    #[test]
    fn no_dot_segment_survives(raw in any_path()) {
        if let PathAction::Forward(p) = defaults(&raw) {
            prop_assert!(p.starts_with('/'));
            prop_assert!(!p.contains('\\'));
            for seg in p.split('/') {
                prop_assert!(seg != "." && seg != "..", "{} -> {}", raw, p);
                prop_assert!(!seg.eq_ignore_ascii_case("%2e"), "{} -> {}", raw, p);
            }
        }
    }
}
