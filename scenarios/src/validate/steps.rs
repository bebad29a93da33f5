//! Timeline validation: every step and check in order, with what exists at that moment
//! (instances, upstreams in the registration, open connections, issued identities, marks).

use std::collections::{BTreeMap, BTreeSet};

use crate::duration::check_timeout_ref;
use crate::error::{FieldError, FieldPath};
use crate::model::{ConnProtocol, Exclusion, Scenario, Step};
use crate::names::HEALTH_STATUSES;

use super::checks::{check_check, check_identity};
use super::{
    check_config_entry, check_instance, check_intention, go_duration, one_of, service_name,
};

/// What exists at a point of the timeline.
pub(super) struct State<'a> {
    pub(super) instances: BTreeSet<&'a str>,
    /// Upstreams in the registration now.
    pub(super) upstreams: BTreeSet<&'a str>,
    /// Upstreams of the setup not yet added (`initial = false`).
    pub(super) pending_upstreams: BTreeSet<&'a str>,
    /// Implicit upstreams (transparent mode, from intentions): no local listener.
    pub(super) implicit: BTreeSet<&'a str>,
    pub(super) conns: BTreeMap<&'a str, ConnProtocol>,
    /// `open-upstream` connections, with their upstream.
    pub(super) upstream_conns: BTreeMap<&'a str, &'a str>,
    pub(super) issued: BTreeSet<&'a str>,
    pub(super) marks: BTreeSet<&'a str>,
    pub(super) index_reset: bool,
    /// The setup has `[setup.transparent]`.
    pub(super) transparent: bool,
    /// Names of `setup.jwt_providers`.
    pub(super) jwt_providers: BTreeSet<&'a str>,
    /// What its redirect step excludes.
    pub(super) exclude: Vec<Exclusion>,
}

pub(super) fn check_steps(s: &Scenario) -> Result<(), FieldError> {
    let mut st = State {
        instances: s.setup.instances.iter().map(|i| i.id.as_str()).collect(),
        upstreams: s
            .setup
            .upstreams
            .iter()
            .filter(|u| u.initial && !u.implicit)
            .map(|u| u.name.as_str())
            .collect(),
        implicit: s
            .setup
            .upstreams
            .iter()
            .filter(|u| u.implicit)
            .map(|u| u.name.as_str())
            .collect(),
        pending_upstreams: s
            .setup
            .upstreams
            .iter()
            .filter(|u| !u.initial)
            .map(|u| u.name.as_str())
            .collect(),
        conns: BTreeMap::new(),
        upstream_conns: BTreeMap::new(),
        issued: BTreeSet::new(),
        marks: BTreeSet::new(),
        index_reset: false,
        transparent: s.setup.transparent.is_some(),
        jwt_providers: s
            .setup
            .jwt_providers
            .iter()
            .map(|p| p.name.as_str())
            .collect(),
        exclude: s
            .setup
            .transparent
            .as_ref()
            .map(|t| t.exclude.clone())
            .unwrap_or_default(),
    };
    for (i, step) in s.steps.iter().enumerate() {
        let at = FieldPath::root().key("steps").index(i);
        check_step(&at, step, s, &mut st)?;
    }
    Ok(())
}

fn check_step<'a>(
    at: &FieldPath,
    step: &'a Step,
    s: &Scenario,
    st: &mut State<'a>,
) -> Result<(), FieldError> {
    match step {
        Step::Intention(spec) => check_intention(at, spec, &s.setup),
        Step::DeleteIntention {
            source,
            destination,
        } => {
            name_or_star(&at.key("source"), source)?;
            name_or_star(&at.key("destination"), destination)
        }
        Step::ConfigEntry { entry } => check_config_entry(&at.key("entry"), entry),
        Step::RotateCa {
            key_type, key_bits, ..
        } => super::check_key_kind(at, key_type.as_deref(), *key_bits),
        Step::RotateIntermediate | Step::ClearFaults => Ok(()),
        Step::JwtRotate { provider } => {
            let remote = s
                .setup
                .jwt_providers
                .iter()
                .any(|p| &p.name == provider && p.remote);
            if remote {
                Ok(())
            } else {
                Err(FieldError::new(
                    at.key("provider"),
                    format!("{provider:?} is not a `remote` provider of `setup.jwt_providers`"),
                ))
            }
        }
        Step::AgentServerCert { .. } if s.setup.agent_tls.is_none() => Err(FieldError::new(
            at.key("ca"),
            "needs [setup.agent_tls]: the agent serves no TLS to switch the certificate of",
        )),
        Step::AgentServerCert { .. } => Ok(()),
        Step::Fault { for_, .. } => {
            if let Some(d) = for_ {
                go_duration(&at.key("for"), d)?;
            }
            Ok(())
        }
        Step::IndexReset => {
            st.index_reset = true;
            Ok(())
        }
        Step::RestartAgent { down_for, .. } => {
            if let Some(d) = down_for {
                go_duration(&at.key("down_for"), d)?;
            }
            // A restart comes back with new, smaller indexes.
            st.index_reset = true;
            Ok(())
        }
        Step::SetHealth { instance, status } => {
            known_instance(&at.key("instance"), instance, st)?;
            one_of(&at.key("status"), status, HEALTH_STATUSES)
        }
        Step::AddInstance(spec) => {
            check_instance(at, spec)?;
            if !st.instances.insert(spec.id.as_str()) {
                return Err(FieldError::new(
                    at.key("id"),
                    format!("instance id {:?} already exists", spec.id),
                ));
            }
            Ok(())
        }
        Step::AddUpstream { name } => {
            if st.pending_upstreams.remove(name.as_str()) {
                st.upstreams.insert(name.as_str());
                Ok(())
            } else if st.upstreams.contains(name.as_str()) {
                Err(FieldError::new(
                    at.key("name"),
                    format!("upstream {name:?} is already in the registration"),
                ))
            } else {
                Err(FieldError::new(
                    at.key("name"),
                    format!(
                        "upstream {name:?} is not in `setup.upstreams` (add it there with \
                         `initial = false`)"
                    ),
                ))
            }
        }
        Step::App { answer } => super::route::check_app_answer(&at.key("answer"), answer, s),
        Step::Instance { instance, answer } => {
            known_instance(&at.key("instance"), instance, st)?;
            super::route::check_answer(&at.key("answer"), answer, true)
        }
        Step::OpenUpstream { conn, upstream, .. } => {
            service_name(&at.key("conn"), conn)?;
            present_upstream(&at.key("upstream"), upstream, st)?;
            if st.conns.contains_key(conn.as_str())
                || st
                    .upstream_conns
                    .insert(conn.as_str(), upstream.as_str())
                    .is_some()
            {
                return Err(FieldError::new(
                    at.key("conn"),
                    format!("connection {conn:?} is already open"),
                ));
            }
            Ok(())
        }
        Step::Issue { name, service } => {
            service_name(&at.key("service"), service)?;
            new_moment(&at.key("name"), name, st)?;
            st.issued.insert(name.as_str());
            Ok(())
        }
        Step::Open {
            conn,
            identity,
            protocol,
        } => {
            service_name(&at.key("conn"), conn)?;
            check_identity(&at.key("identity"), identity, st)?;
            if st.conns.insert(conn.as_str(), *protocol).is_some() {
                return Err(FieldError::new(
                    at.key("conn"),
                    format!("connection {conn:?} is already open"),
                ));
            }
            Ok(())
        }
        Step::Mark { name } => {
            new_moment(&at.key("name"), name, st)?;
            st.marks.insert(name.as_str());
            Ok(())
        }
        Step::Idle { duration, reason } => {
            timeout_ref(&at.key("duration"), duration)?;
            if reason.trim().is_empty() {
                return Err(FieldError::new(
                    at.key("reason"),
                    "say why the scenario idles",
                ));
            }
            Ok(())
        }
        Step::Expect(e) => {
            if e.name.trim().is_empty() {
                return Err(FieldError::new(at.key("name"), "must not be empty"));
            }
            if let Some(w) = &e.within {
                timeout_ref(&at.key("within"), w)?;
            }
            if let Some(w) = &e.stable_for {
                timeout_ref(&at.key("stable_for"), w)?;
            }
            check_check(&at.key("check"), &e.check, st)
        }
    }
}

pub(super) fn known_instance(at: &FieldPath, id: &str, st: &State<'_>) -> Result<(), FieldError> {
    if st.instances.contains(id) {
        Ok(())
    } else {
        Err(FieldError::new(
            at.clone(),
            format!("no instance {id:?} in `setup.instances` or an earlier `add-instance`"),
        ))
    }
}

pub(super) fn present_upstream(
    at: &FieldPath,
    name: &str,
    st: &State<'_>,
) -> Result<(), FieldError> {
    if st.upstreams.contains(name) {
        Ok(())
    } else if st.implicit.contains(name) {
        Err(FieldError::new(
            at.clone(),
            format!(
                "upstream {name:?} is implicit: it has no local listener; the app reaches it \
                 only through its virtual IP (an `upstream` check with via = \"virtual-ip\")"
            ),
        ))
    } else if st.pending_upstreams.contains(name) {
        Err(FieldError::new(
            at.clone(),
            format!("upstream {name:?} is not in the registration yet (no earlier `add-upstream`)"),
        ))
    } else {
        Err(FieldError::new(
            at.clone(),
            format!("no upstream {name:?} in `setup.upstreams`"),
        ))
    }
}

pub(super) fn unknown_conn(at: &FieldPath, conn: &str) -> FieldError {
    FieldError::new(
        at.clone(),
        format!("no earlier `open` step opened connection {conn:?}"),
    )
}

/// Issue and mark names share one namespace: `differs_from_mark` accepts either.
fn new_moment(at: &FieldPath, name: &str, st: &State<'_>) -> Result<(), FieldError> {
    service_name(at, name)?;
    if st.issued.contains(name) || st.marks.contains(name) {
        return Err(FieldError::new(
            at.clone(),
            format!("{name:?} already names an earlier `issue` or `mark`"),
        ));
    }
    Ok(())
}

fn name_or_star(at: &FieldPath, name: &str) -> Result<(), FieldError> {
    if name == "*" {
        Ok(())
    } else {
        service_name(at, name)
    }
}

fn timeout_ref(at: &FieldPath, text: &str) -> Result<(), FieldError> {
    check_timeout_ref(text).map_err(|e| FieldError::new(at.clone(), e.to_string()))
}
