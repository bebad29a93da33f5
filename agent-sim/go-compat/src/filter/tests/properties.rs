//! Properties: no input makes the parser or evaluator panic, and boolean structure (with
//! go-bexpr's precedence: `not` over `and` over `or`) composes the way the grammar says.

use proptest::prelude::*;

use super::support::health_entry;
use crate::filter::{Filter, HEALTH_ENTRY_FIELDS};

/// Match expressions over the health entry fixture.
const ATOMS: &[&str] = &[
    "Service.Meta.version == v1",
    "Service.Meta.version == v2",
    "Service.Tags contains canary",
    "v2 not in Service.Tags",
    "Checks.Status == warning",
    "Checks.Status != passing",
    "Node.Node == n2",
    "Service.Meta.missing is empty",
    "Service.Port == 21000",
    "Service.Kind not matches `proxy$`",
];

#[derive(Debug, Clone)]
enum Tree {
    Atom(usize),
    Not(Box<Self>),
    And(Box<Self>, Box<Self>),
    Or(Box<Self>, Box<Self>),
}

fn tree() -> impl Strategy<Value = Tree> {
    let leaf = (0..ATOMS.len()).prop_map(Tree::Atom);
    leaf.prop_recursive(5, 40, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|t| Tree::Not(Box::new(t))),
            (inner.clone(), inner.clone()).prop_map(|(l, r)| Tree::And(Box::new(l), Box::new(r))),
            (inner.clone(), inner).prop_map(|(l, r)| Tree::Or(Box::new(l), Box::new(r))),
        ]
    })
}

/// Renders with as few parentheses as the precedence allows (or: 1, and: 2, not: 3).
fn render(t: &Tree, min_prec: u8) -> String {
    let (prec, text) = match t {
        Tree::Atom(i) => (4, ATOMS[*i].to_owned()),
        Tree::Not(c) => (3, format!("not {}", render(c, 3))),
        Tree::And(l, r) => (2, format!("{} and {}", render(l, 2), render(r, 2))),
        Tree::Or(l, r) => (1, format!("{} or {}", render(l, 1), render(r, 1))),
    };
    if prec < min_prec {
        format!("({text})")
    } else {
        text
    }
}

fn model(t: &Tree, atoms: &[bool]) -> bool {
    match t {
        Tree::Atom(i) => atoms[*i],
        Tree::Not(c) => !model(c, atoms),
        Tree::And(l, r) => model(l, atoms) && model(r, atoms),
        Tree::Or(l, r) => model(l, atoms) || model(r, atoms),
    }
}

proptest! {
    #[test]
    fn boolean_structure_composes(t in tree()) {
        let entry = health_entry();
        let atoms: Vec<bool> = ATOMS
            .iter()
            .map(|a| Filter::parse_for(a, HEALTH_ENTRY_FIELDS).unwrap().matches(&entry).unwrap())
            .collect();
        let text = render(&t, 0);
        let f = Filter::parse_for(&text, HEALTH_ENTRY_FIELDS).unwrap();
        prop_assert_eq!(f.matches(&entry).unwrap(), model(&t, &atoms), "{}", text);
    }

    #[test]
    fn arbitrary_input_never_panics(s in r#"[ a-zA-Z0-9_.\[\]()"`=!<>\\-]{0,60}"#) {
        if let Ok(f) = Filter::parse(&s) {
            let _ = f.matches(&health_entry());
        }
    }

    #[test]
    fn keyword_soup_never_panics(words in prop::collection::vec(
        prop::sample::select(vec![
            "not", "and", "or", "in", "is", "empty", "contains", "matches", "==", "!=", "(", ")",
            "Service", ".", "Meta", "[", "]", "\"x\"", "`y`", "1", "-2.5", "Checks", "Status",
        ]),
        0..24,
    )) {
        let s = words.join(" ");
        if let Ok(f) = Filter::parse(&s) {
            let _ = f.matches(&health_entry());
        }
    }
}
