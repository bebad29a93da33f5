//! Deserialization of the model that keeps the field path through the internally tagged enums
//! (`do = "..."`, `kind = "..."`). serde buffers an internally tagged enum before it knows the
//! variant, which loses the path of any error inside it; here each tagged table is rewritten as an
//! externally tagged one (`{"open": {...}}`) and deserialized through a `remote` mirror of the
//! model type with its own path tracking. The inner path travels back inside the error message
//! (see [`encode`]) and is joined to the outer one by the loader.
//!
//! The mirrors are `#[serde(remote = ...)]`: they construct the model types directly, so a field
//! added to the model without being added here does not compile.

use std::collections::BTreeMap;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::error::{FieldPath, Seg};
use crate::model::{
    AgentCertCa, Answer, AppProtocol, BurstCheck, Catch, Check, ConnProtocol, Expectation,
    FaultSpec, Generator, Identity, InboundVia, InstanceSpec, IntentionSpec, Outcome,
    OutsideTarget, Policy, Profile, RequestCheck, Requirement, RootRef, Scenario, Setup,
    SpreadCheck, Step, UpstreamVia,
};

/// Starts and ends the encoded inner path of an error message.
const MARK: char = '\u{1}';

/// A scenario deserialized through the mirrors.
pub(crate) struct Parsed(pub(crate) Scenario);

impl<'de> Deserialize<'de> for Parsed {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        ScenarioRepr::deserialize(d).map(Parsed)
    }
}

/// An error message carrying the path (relative to the value being deserialized) where it
/// happened.
fn encode<E: serde::de::Error>(path: &FieldPath, message: &str) -> E {
    let segs = serde_json::to_string(&path.0).unwrap_or_default();
    E::custom(format!("{MARK}{segs}{MARK}{message}"))
}

/// Splits a message made by [`encode`] into its path and text; other messages have an empty path.
pub(crate) fn decode(message: &str) -> (FieldPath, String) {
    let plain = || (FieldPath::root(), message.to_owned());
    let Some(rest) = message.strip_prefix(MARK) else {
        return plain();
    };
    let Some((segs, text)) = rest.split_once(MARK) else {
        return plain();
    };
    match serde_json::from_str::<Vec<Seg>>(segs) {
        Ok(segs) => (FieldPath(segs), text.to_owned()),
        Err(_) => plain(),
    }
}

/// Converts serde_path_to_error's path, dropping the variant segments of the externally tagged
/// rewrite (they are the tag's value, not a key of the file).
pub(crate) fn convert_path(path: &serde_path_to_error::Path) -> FieldPath {
    FieldPath(
        path.iter()
            .filter_map(|seg| match seg {
                serde_path_to_error::Segment::Seq { index } => Some(Seg::Index(*index)),
                serde_path_to_error::Segment::Map { key } => Some(Seg::Key(key.clone())),
                serde_path_to_error::Segment::Enum { .. }
                | serde_path_to_error::Segment::Unknown => None,
            })
            .collect(),
    )
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "table",
    }
}

/// Deserializes an internally tagged table (`tag` names the variant) through `inner`, a mirror
/// that expects the externally tagged form, keeping the path of any error.
fn tagged<'de, D, T, F>(d: D, tag: &str, inner: F) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    F: for<'a, 'b> FnOnce(
        serde_path_to_error::Deserializer<'a, 'b, Value>,
    ) -> Result<T, serde_json::Error>,
{
    let value = Value::deserialize(d)?;
    let Value::Object(mut table) = value else {
        return Err(D::Error::custom(format!(
            "invalid type: {}, expected a table with a `{tag}` key",
            type_name(&value)
        )));
    };
    let variant = match table.remove(tag) {
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(encode(
                &FieldPath::root().key(tag),
                &format!("invalid type: {}, expected a string", type_name(&other)),
            ));
        }
        None => return Err(D::Error::custom(format!("missing field `{tag}`"))),
    };
    let mut outer = Map::new();
    outer.insert(variant, Value::Object(table));
    let mut track = serde_path_to_error::Track::new();
    let de = serde_path_to_error::Deserializer::new(Value::Object(outer), &mut track);
    match inner(de) {
        Ok(v) => Ok(v),
        Err(e) => {
            let here = convert_path(&track.path());
            let (nested, message) = decode(&e.to_string());
            Err(encode(&here.join(&nested), &message))
        }
    }
}

fn steps<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Step>, D::Error> {
    struct One(Step);
    impl<'de> Deserialize<'de> for One {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            tagged(d, "do", |de| StepRepr::deserialize(de)).map(One)
        }
    }
    Ok(Vec::<One>::deserialize(d)?
        .into_iter()
        .map(|o| o.0)
        .collect())
}

fn generator<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Generator>, D::Error> {
    tagged(d, "kind", |de| GeneratorRepr::deserialize(de)).map(Some)
}

fn check<'de, D: Deserializer<'de>>(d: D) -> Result<Check, D::Error> {
    tagged(d, "kind", |de| CheckRepr::deserialize(de))
}

fn identity<'de, D: Deserializer<'de>>(d: D) -> Result<Identity, D::Error> {
    tagged(d, "kind", |de| IdentityRepr::deserialize(de))
}

fn opt_identity<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Identity>, D::Error> {
    identity(d).map(Some)
}

fn db() -> String {
    "db".into()
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(remote = "Scenario", deny_unknown_fields)]
struct ScenarioRepr {
    id: String,
    description: String,
    profile: Profile,
    #[serde(default)]
    features: Vec<String>,
    #[serde(default)]
    catches: Vec<Catch>,
    #[serde(default)]
    setup: Setup,
    #[serde(default, deserialize_with = "steps")]
    steps: Vec<Step>,
    #[serde(default, deserialize_with = "generator")]
    generate: Option<Generator>,
}

#[derive(Deserialize)]
#[serde(remote = "Step", rename_all = "kebab-case", deny_unknown_fields)]
enum StepRepr {
    Intention(IntentionSpec),
    DeleteIntention {
        source: String,
        #[serde(default = "db")]
        destination: String,
    },
    ConfigEntry {
        entry: Value,
    },
    RotateCa {
        #[serde(default = "yes")]
        cross_sign: bool,
        #[serde(default)]
        key_type: Option<String>,
        #[serde(default)]
        key_bits: Option<u32>,
    },
    RotateIntermediate {},
    AgentServerCert {
        ca: AgentCertCa,
    },
    Fault {
        fault: FaultSpec,
        #[serde(default, rename = "for")]
        for_: Option<String>,
    },
    ClearFaults {},
    IndexReset {},
    RestartAgent {
        #[serde(default)]
        down_for: Option<String>,
        #[serde(default)]
        default_intention_policy: Option<Policy>,
    },
    SetHealth {
        instance: String,
        status: String,
    },
    AddInstance(InstanceSpec),
    Instance {
        instance: String,
        answer: Answer,
    },
    App {
        answer: Answer,
    },
    AddUpstream {
        name: String,
    },
    Issue {
        name: String,
        service: String,
    },
    Open {
        conn: String,
        #[serde(deserialize_with = "identity")]
        identity: Identity,
        #[serde(default)]
        protocol: ConnProtocol,
    },
    OpenUpstream {
        conn: String,
        upstream: String,
        #[serde(default)]
        protocol: AppProtocol,
    },
    JwtRotate {
        provider: String,
    },
    Mark {
        name: String,
    },
    Idle {
        duration: String,
        reason: String,
    },
    Expect(#[serde(deserialize_with = "ExpectationRepr::deserialize")] Expectation),
}

#[derive(Deserialize)]
#[serde(remote = "Expectation", deny_unknown_fields)]
struct ExpectationRepr {
    name: String,
    #[serde(deserialize_with = "check")]
    check: Check,
    #[serde(default)]
    within: Option<String>,
    #[serde(default)]
    stable_for: Option<String>,
    #[serde(default)]
    requirement: Requirement,
}

#[derive(Deserialize)]
#[serde(remote = "Check", rename_all = "kebab-case", deny_unknown_fields)]
enum CheckRepr {
    Inbound {
        #[serde(deserialize_with = "identity")]
        identity: Identity,
        outcome: Outcome,
        #[serde(default)]
        via: InboundVia,
    },
    Http {
        #[serde(default, deserialize_with = "opt_identity")]
        identity: Option<Identity>,
        #[serde(default)]
        conn: Option<String>,
        #[serde(default)]
        method: Option<String>,
        path: String,
        #[serde(default)]
        headers: BTreeMap<String, String>,
        #[serde(default)]
        jwt: Option<crate::model::JwtToken>,
        status: u16,
        #[serde(default)]
        streams: Option<u32>,
        #[serde(default)]
        app_path: Option<String>,
        #[serde(default)]
        app_headers: BTreeMap<String, String>,
        #[serde(default)]
        app_without: Vec<String>,
    },
    Grpc {
        #[serde(default, deserialize_with = "opt_identity")]
        identity: Option<Identity>,
        #[serde(default)]
        conn: Option<String>,
        #[serde(default)]
        upstream: Option<String>,
        path: String,
        #[serde(default)]
        metadata: BTreeMap<String, String>,
        #[serde(default)]
        code: u32,
        #[serde(default)]
        trailers: BTreeMap<String, String>,
        #[serde(default)]
        streams: Option<u32>,
    },
    ConnOpen {
        conn: String,
    },
    TlsHandshake {
        #[serde(deserialize_with = "identity")]
        identity: Identity,
        #[serde(default)]
        tls_version: Option<String>,
        #[serde(default)]
        cipher_suites: Vec<String>,
        outcome: Outcome,
        #[serde(default)]
        negotiated_cipher: Option<String>,
    },
    ConnClosed {
        conn: String,
    },
    ServedLeaf {
        #[serde(default = "db")]
        service: String,
        #[serde(default)]
        root: RootRef,
        #[serde(default)]
        differs_from_mark: Option<String>,
        #[serde(default)]
        key_type: Option<String>,
        #[serde(default)]
        key_bits: Option<u32>,
        #[serde(default)]
        full_chain: bool,
    },
    Upstream {
        upstream: String,
        reach: Vec<String>,
        #[serde(default)]
        all: bool,
        #[serde(default = "db")]
        presented: String,
        #[serde(default)]
        via: UpstreamVia,
    },
    UnknownDestination {
        outcome: Outcome,
        #[serde(default)]
        to: OutsideTarget,
        #[serde(default)]
        as_excluded_uid: bool,
    },
    NoRedirectLoop {},
    UpstreamRefused {
        upstream: String,
    },
    ListenerOpen {
        upstream: String,
    },
    AgentUsage {
        #[serde(default)]
        token_on_every_request: bool,
        #[serde(default)]
        blocking: Vec<String>,
        #[serde(default)]
        max_requests_per_minute: Option<u32>,
    },
    Request(RequestCheck),
    Spread(SpreadCheck),
    Burst(BurstCheck),
    IndexResetHonoured {},
    AuthorizeSerial {},
    ProxyLog {
        contains: Vec<String>,
    },
}

#[derive(Deserialize)]
#[serde(remote = "Identity", rename_all = "kebab-case", deny_unknown_fields)]
enum IdentityRepr {
    Service {
        service: String,
    },
    Named {
        name: String,
    },
    UntrustedCa {
        service: String,
    },
    ForeignTrustDomain {
        service: String,
    },
    Expired {
        service: String,
    },
    NoSpiffe {},
    AgentId {},
    CommonNameMismatch {
        common_name: String,
        service: String,
    },
    SelfSigned {
        service: String,
    },
    NoCert {},
}

#[derive(Deserialize)]
#[serde(remote = "Generator", rename_all = "kebab-case", deny_unknown_fields)]
enum GeneratorRepr {
    RandomIntentions { cases: u32, sources: Vec<String> },
}
