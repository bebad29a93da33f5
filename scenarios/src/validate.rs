//! Validation of a parsed scenario: known names (features, broken behaviours, endpoint families),
//! durations that parse, and references that resolve in timeline order (instances, upstreams,
//! connections, issued identities, marks). [`crate::parse`] runs it with lines; on its own it
//! reports the scenario id instead of a file.
//!
//! This file owns the entry points and the scenario-wide rules (id, description, names, the
//! generator); `validate/setup.rs` checks what the scenario sets up, `validate/steps.rs` and
//! `validate/checks.rs` its timeline, `validate/fields.rs` the field-level rules they share.

mod app_seen;
mod checks;
mod fields;
mod route;
mod setup;
mod steps;

use self::fields::{go_duration, one_of, service_name};
pub use self::setup::parse_socket_mode;
use self::setup::{
    check_config_entry, check_instance, check_intention, check_key_kind, check_setup,
    entry_kind_name,
};
use crate::error::{FieldError, FieldPath, ScenarioError};
use crate::model::{Scenario, Step};
use crate::names::{BROKEN_BEHAVIOURS, ENVIRONMENT_TAMPERS, FEATURES};

/// The source a `random-intentions` expansion reserves for its propagation marker.
pub const MARKER_SOURCE: &str = "precedence-marker";

/// The most cases a `random-intentions` generator may ask for.
pub(crate) const MAX_CASES: u32 = 1000;

/// Validates one scenario. Errors name the field; `path` is the scenario id and `line` is `None`
/// (use [`crate::parse`] for file and line).
pub fn validate(scenario: &Scenario) -> Result<(), ScenarioError> {
    check_scenario(scenario).map_err(|fe| ScenarioError {
        path: scenario.id.clone(),
        line: None,
        field: fe.field.rendered(),
        message: fe.message,
    })
}

/// Validates a set of scenarios (e.g. the catalogue plus a `--scenario-dir`): each one, and ids
/// unique across them.
pub fn validate_all(scenarios: &[Scenario]) -> Result<(), ScenarioError> {
    let mut seen = std::collections::BTreeSet::new();
    for s in scenarios {
        validate(s)?;
        if !seen.insert(s.id.as_str()) {
            return Err(ScenarioError {
                path: s.id.clone(),
                line: None,
                field: Some("id".into()),
                message: format!("duplicate scenario id {:?}", s.id),
            });
        }
    }
    Ok(())
}

/// Validates a scenario; the first problem found, with its field.
pub(crate) fn check_scenario(s: &Scenario) -> Result<(), FieldError> {
    let root = FieldPath::root();
    if !is_kebab(&s.id) {
        return Err(FieldError::new(
            root.key("id"),
            format!(
                "{:?} is not a kebab-case id (a-z, 0-9, single dashes)",
                s.id
            ),
        ));
    }
    if s.description.trim().is_empty() {
        return Err(FieldError::new(
            root.key("description"),
            "must not be empty",
        ));
    }
    check_names(&root.key("features"), &s.features, FEATURES, "feature")?;
    let catchable: Vec<&str> = BROKEN_BEHAVIOURS
        .iter()
        .chain(ENVIRONMENT_TAMPERS)
        .copied()
        .collect();
    check_catches(s, &root.key("catches"), &catchable)?;
    check_setup(&root.key("setup"), &s.setup)?;
    steps::check_steps(s)?;
    if let Some(crate::model::Generator::RandomIntentions { cases, sources }) = &s.generate {
        check_generator(s, *cases, sources)?;
    }
    Ok(())
}

fn check_names(
    at: &FieldPath,
    names: &[String],
    known: &[&str],
    what: &str,
) -> Result<(), FieldError> {
    for (i, n) in names.iter().enumerate() {
        if !known.contains(&n.as_str()) {
            return Err(FieldError::new(
                at.index(i),
                format!("unknown {what} {n:?}; known: {}", known.join(", ")),
            ));
        }
        if names[..i].contains(n) {
            return Err(FieldError::new(
                at.index(i),
                format!("{n:?} is listed twice"),
            ));
        }
    }
    Ok(())
}

/// Every `catches` entry names a known broken behaviour once; the checks it names are `expect`
/// steps of the scenario (a generated scenario's check names depend on its seed: bare names
/// only).
fn check_catches(s: &Scenario, at: &FieldPath, known: &[&str]) -> Result<(), FieldError> {
    let names: Vec<String> = s.catches.iter().map(|c| c.sabotage.clone()).collect();
    check_names(at, &names, known, "broken behaviour")?;
    let expects: Vec<&str> = s
        .steps
        .iter()
        .filter_map(|step| match step {
            Step::Expect(e) => Some(e.name.as_str()),
            _ => None,
        })
        .collect();
    for (i, c) in s.catches.iter().enumerate() {
        if c.checks.is_empty() {
            continue;
        }
        let at = at.index(i).key("checks");
        if s.generate.is_some() {
            return Err(FieldError::new(
                at,
                "a generated scenario's check names depend on its seed: write the bare name \
                 (any check may catch it)",
            ));
        }
        for (j, name) in c.checks.iter().enumerate() {
            if !expects.contains(&name.as_str()) {
                return Err(FieldError::new(
                    at.index(j),
                    format!(
                        "{name:?} is not the name of an `expect` step of this scenario; known: {}",
                        expects.join(", ")
                    ),
                ));
            }
            if c.checks[..j].contains(name) {
                return Err(FieldError::new(
                    at.index(j),
                    format!("{name:?} is listed twice"),
                ));
            }
        }
    }
    Ok(())
}

fn check_generator(s: &Scenario, cases: u32, sources: &[String]) -> Result<(), FieldError> {
    let at = FieldPath::root().key("generate");
    if !(1..=1000).contains(&cases) {
        return Err(FieldError::new(
            at.key("cases"),
            "must be between 1 and 1000",
        ));
    }
    if sources.is_empty() {
        return Err(FieldError::new(at.key("sources"), "must not be empty"));
    }
    for (i, src) in sources.iter().enumerate() {
        let at = at.key("sources").index(i);
        service_name(&at, src)?;
        if src == MARKER_SOURCE {
            return Err(FieldError::new(
                at,
                format!("{MARKER_SOURCE:?} is reserved for the generator"),
            ));
        }
        if sources[..i].contains(src) {
            return Err(FieldError::new(at, format!("{src:?} is listed twice")));
        }
    }
    // The generator's model owns every intention toward db: nothing else may write one.
    if !s.setup.intentions.is_empty() {
        return Err(FieldError::new(
            FieldPath::root().key("setup").key("intentions"),
            "a random-intentions scenario writes every intention itself; remove these",
        ));
    }
    for (i, step) in s.steps.iter().enumerate() {
        let writes_intentions = match step {
            Step::Intention(_) | Step::DeleteIntention { .. } => true,
            Step::ConfigEntry { entry } => {
                entry_kind_name(entry).is_some_and(|(k, _)| k == "service-intentions")
            }
            _ => false,
        };
        if writes_intentions {
            return Err(FieldError::new(
                FieldPath::root().key("steps").index(i),
                "a random-intentions scenario writes every intention itself",
            ));
        }
    }
    Ok(())
}

fn is_kebab(id: &str) -> bool {
    !id.is_empty()
        && id.split('-').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

#[cfg(test)]
mod tests;
