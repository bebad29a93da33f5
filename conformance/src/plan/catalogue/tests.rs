//! Tests of scenario loading, globbing and selection.

use super::*;

fn scenario(id: &str, profile: Profile) -> Scenario {
    parse(
        "x.toml",
        &format!(
            "id = \"{id}\"\ndescription = \"d\"\nprofile = \"{}\"\n",
            match profile {
                Profile::Core => "core",
                Profile::L7 => "l7",
                Profile::Extended => "extended",
                Profile::Transparent => "transparent",
                Profile::L7Traffic => "l7-traffic",
                Profile::Security => "security",
            }
        ),
    )
    .unwrap()
}

#[test]
fn globs() {
    for (p, t, want) in [
        ("*", "anything", true),
        ("l4-*", "l4-allow-deny", true),
        ("l4-*", "l7-path", false),
        ("*-agent-*", "fail-static-agent-down", true),
        ("ca-rotation", "ca-rotation-no-cross-sign", false),
        ("ca-rotation*", "ca-rotation-no-cross-sign", true),
        ("c?-rotation", "ca-rotation", true),
        ("", "", true),
        ("", "x", false),
        ("a*b*c", "axxbyyc", true),
        ("a*b*c", "axxbyy", false),
    ] {
        assert_eq!(glob(p, t), want, "{p} vs {t}");
    }
}

#[test]
fn parse_errors_name_file_and_line() {
    let err = parse(
        "dir/s.toml",
        "id = \"x\"\ndescription = \"d\"\nprofile = \"gold\"\n",
    )
    .unwrap_err();
    assert_eq!(err.kind(), "scenario_invalid");
    let text = err.to_string();
    assert!(
        text.starts_with("dir/s.toml:3: profile: unknown variant `gold`"),
        "{text}"
    );
}

#[test]
fn selection_filters_and_marks_skips() {
    let all = vec![
        scenario("l4-allow-deny", Profile::Core),
        scenario("intention-change", Profile::Core),
        scenario("l7-path-method-header", Profile::L7),
        scenario("config-change", Profile::Extended),
    ];
    let sel = Selection {
        include: vec![],
        skip: vec!["intention-*".into()],
        profiles: vec![Profile::Core, Profile::L7],
    };
    let plan = select(all.clone(), &sel);
    let ids: Vec<(&str, bool)> = plan
        .iter()
        .map(|p| (p.scenario().id.as_str(), matches!(p, Planned::Skip(_))))
        .collect();
    assert_eq!(
        ids,
        [
            ("l4-allow-deny", false),
            ("intention-change", true),
            ("l7-path-method-header", false)
        ]
    );
    let only = Selection {
        include: vec!["*change*".into()],
        ..Selection::default()
    };
    let ids: Vec<String> = select(all, &only)
        .iter()
        .map(|p| p.scenario().id.clone())
        .collect();
    assert_eq!(ids, ["intention-change", "config-change"]);
}

#[test]
fn duplicate_ids_are_an_error() {
    let all = [scenario("a", Profile::Core), scenario("a", Profile::L7)];
    assert!(check_unique(&all).is_err());
    assert!(check_unique(&all[..1]).is_ok());
}

#[test]
fn load_dir_reads_toml_files_recursively() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("core")).unwrap();
    std::fs::write(
        dir.path().join("core/b.toml"),
        "id = \"b\"\ndescription = \"d\"\nprofile = \"core\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("a.toml"),
        "id = \"a\"\ndescription = \"d\"\nprofile = \"l7\"\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.md"), "ignored").unwrap();
    let ids: Vec<String> = load_dir(dir.path())
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids, ["a", "b"]);
    assert!(load_dir(&dir.path().join("missing")).is_err());
}

#[test]
fn generated_scenarios_are_expanded_with_the_seed() {
    let mut s = scenario("p", Profile::Core);
    assert_eq!(expand(&s, 1).unwrap(), s, "a plain scenario is unchanged");
    s.generate = Some(scenarios::Generator::RandomIntentions {
        cases: 2,
        sources: vec!["web".into(), "api".into()],
    });
    let a = expand(&s, 1).unwrap();
    assert!(
        a.generate.is_none() && !a.steps.is_empty(),
        "concrete steps"
    );
    assert_eq!(expand(&s, 1).unwrap(), a, "same seed, same scenario");
    assert_ne!(expand(&s, 2).unwrap(), a, "another seed, another scenario");
}
