//! The README's Python and Node testcontainers snippets are the text of the scripts CI runs
//! (`scripts/snippets/agent_sim_python.py`, `agent_sim_node.mjs`, run by
//! `scripts/snippets/run.sh`): each README block equals the lines between the script's
//! `snippet:start` and `snippet:end` markers, so a snippet cannot drift from what was run.

use std::path::Path;

fn read(path: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The lines between `<comment> snippet:start` and `<comment> snippet:end`.
fn region(text: &str, comment: &str) -> String {
    let start = format!("{comment} snippet:start\n");
    let end = format!("{comment} snippet:end");
    let a = text.find(&start).expect("snippet:start marker") + start.len();
    let b = text[a..].find(&end).expect("snippet:end marker") + a;
    text[a..b].to_owned()
}

/// Every fenced block of `lang` in `markdown`.
fn blocks(markdown: &str, lang: &str) -> Vec<String> {
    let open = format!("```{lang}\n");
    let mut out = Vec::new();
    let mut rest = markdown;
    while let Some(i) = rest.find(&open) {
        let body = &rest[i + open.len()..];
        let j = body.find("```\n").expect("closed fence");
        out.push(body[..j].to_owned());
        rest = &body[j..];
    }
    out
}

#[test]
fn the_python_and_node_snippets_are_the_scripts_ci_runs() {
    let readme = read("README.md");
    for (script, comment, lang) in [
        ("scripts/snippets/agent_sim_python.py", "#", "python"),
        ("scripts/snippets/agent_sim_node.mjs", "//", "js"),
    ] {
        let snippet = region(&read(script), comment);
        assert!(snippet.contains("agent-sim:latest"), "{script}: {snippet}");
        let found = blocks(&readme, lang);
        assert!(
            found.contains(&snippet),
            "README.md has no ```{lang} block equal to {script}'s snippet:\n{snippet}\nblocks: {found:#?}"
        );
    }
}

#[test]
fn the_checker_notices_a_drifted_block() {
    let readme = "```python\nsim = 1\n```\n";
    assert_eq!(blocks(readme, "python"), ["sim = 1\n"]);
    let script = "# snippet:start\nsim = 2\n# snippet:end\n";
    assert!(!blocks(readme, "python").contains(&region(script, "#")));
}
