//! Prepared-query templates (`agent/consul/prepared_query/template.go` + `walk.go`): every string
//! of the `Service` part is a HIL template; `Compile` checks the type, parses each string, compiles
//! `Regexp` and test-renders with the query's own name; `Render` interpolates `${name.full}`,
//! `${name.prefix}`, `${name.suffix}`, `${agent.segment}` and `${match(N)}` (the regexp's groups,
//! `""` when out of range), then drops empty tags when `RemoveEmptyTags` is set.
//!
//! The subset of HIL understood: literal text, `$${` (a literal `${`), and `${ variable }` or
//! `${ match(<integer>) }` with optional spaces. Anything else inside `${...}` is refused at
//! compile time as a bad format (HIL would accept arithmetic and other functions there, which no
//! prepared-query template in Consul's docs uses).

use std::collections::BTreeMap;

use regex::Regex;

use super::{PreparedQuery, ServiceQuery, TEMPLATE_NAME_PREFIX_MATCH};

/// Why a template does not compile or render; the text is Consul's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TemplateError(pub String);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Lit(String),
    /// A variable, with its 1-based column (HIL's position in errors).
    Var(String, usize),
    Match(i64),
}

/// A compiled template: the prototype query and its regexp.
#[derive(Debug, Clone)]
pub struct CompiledTemplate {
    query: PreparedQuery,
    re: Option<Regex>,
}

impl PartialEq for CompiledTemplate {
    fn eq(&self, other: &Self) -> bool {
        self.query == other.query
    }
}

impl CompiledTemplate {
    /// `Compile`.
    pub fn compile(query: &PreparedQuery) -> Result<Self, TemplateError> {
        if query.template.r#type != TEMPLATE_NAME_PREFIX_MATCH {
            return Err(TemplateError(format!(
                "Bad Template.Type '{}'",
                query.template.r#type
            )));
        }
        for (path, text) in strings(&query.service) {
            parse(&text)
                .map_err(|e| TemplateError(format!("Bad format '{text}' in Service{path}: {e}")))?;
        }
        let re = match query.template.regexp.as_str() {
            "" => None,
            r => Some(Regex::new(r).map_err(|e| {
                TemplateError(format!(
                    "Bad Regexp: error parsing regexp: {}",
                    first_line(&e)
                ))
            })?),
        };
        let ct = Self {
            query: query.clone(),
            re,
        };
        ct.render(&query.name, "")?;
        Ok(ct)
    }

    /// `Render(name, source)`: the query for `name`, `segment` being the asking agent's.
    pub fn render(&self, name: &str, segment: &str) -> Result<PreparedQuery, TemplateError> {
        let mut query = self.query.clone();
        let matches: Vec<String> = self
            .re
            .as_ref()
            .and_then(|re| re.captures(name))
            .map(|c| {
                c.iter()
                    .map(|m| m.map_or(String::new(), |m| m.as_str().to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        let prefix = query.name.clone();
        let vars: BTreeMap<&str, String> = BTreeMap::from([
            ("name.full", name.to_owned()),
            ("name.prefix", prefix.clone()),
            (
                "name.suffix",
                name.strip_prefix(prefix.as_str())
                    .unwrap_or(name)
                    .to_owned(),
            ),
            ("agent.segment", segment.to_owned()),
        ]);
        let eval = |path: &str, text: &str| -> Result<String, TemplateError> {
            let parts = parse(text).map_err(TemplateError)?;
            let mut out = String::new();
            for p in parts {
                match p {
                    Part::Lit(s) => out.push_str(&s),
                    Part::Var(v, col) => match vars.get(v.as_str()) {
                        Some(val) => out.push_str(val),
                        None => {
                            return Err(TemplateError(format!(
                                "Bad evaluation for '{text}' in Service{path}: 1:{col}: unknown variable accessed: {v}"
                            )));
                        }
                    },
                    Part::Match(i) => {
                        if let Some(m) = usize::try_from(i).ok().and_then(|i| matches.get(i)) {
                            out.push_str(m);
                        }
                    }
                }
            }
            Ok(out)
        };
        map_strings(&mut query.service, &mut |path, s| {
            *s = eval(path, s)?;
            Ok(())
        })?;
        if let Some(tags) = query
            .service
            .tags
            .as_mut()
            .filter(|_| self.query.template.remove_empty_tags)
        {
            tags.retain(|t| !t.is_empty());
        }
        Ok(query)
    }
}

fn first_line(e: &regex::Error) -> String {
    e.to_string()
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .trim()
        .trim_start_matches("error: ")
        .to_owned()
}

/// Every string of the service query with its `walk` path (struct order; map keys sorted).
fn strings(svc: &ServiceQuery) -> Vec<(String, String)> {
    let mut copy = svc.clone();
    let mut out = Vec::new();
    let _ = map_strings(&mut copy, &mut |path, s| {
        out.push((path.to_owned(), s.clone()));
        Ok(())
    });
    out
}

type Visit<'a> = dyn FnMut(&str, &mut String) -> Result<(), TemplateError> + 'a;

fn map_strings(svc: &mut ServiceQuery, f: &mut Visit<'_>) -> Result<(), TemplateError> {
    f(".Service", &mut svc.service)?;
    f(".SamenessGroup", &mut svc.sameness_group)?;
    for (i, dc) in svc.failover.datacenters.iter_mut().flatten().enumerate() {
        f(&format!(".Failover.Datacenters[{i}]"), dc)?;
    }
    for (i, t) in svc.failover.targets.iter_mut().flatten().enumerate() {
        f(&format!(".Failover.Targets[{i}].Peer"), &mut t.peer)?;
        f(
            &format!(".Failover.Targets[{i}].Datacenter"),
            &mut t.datacenter,
        )?;
    }
    for (i, id) in svc.ignore_check_ids.iter_mut().flatten().enumerate() {
        f(&format!(".IgnoreCheckIDs[{i}]"), id)?;
    }
    f(".Near", &mut svc.near)?;
    for (i, t) in svc.tags.iter_mut().flatten().enumerate() {
        f(&format!(".Tags[{i}]"), t)?;
    }
    for (field, map) in [
        ("NodeMeta", &mut svc.node_meta),
        ("ServiceMeta", &mut svc.service_meta),
    ] {
        for (k, v) in map.iter_mut().flatten() {
            f(&format!(".{field}[{k}]"), v)?;
        }
    }
    f(".Peer", &mut svc.peer)
}

/// Parses one HIL string of the supported subset.
fn parse(text: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut lit = String::new();
    let mut rest = text;
    let mut offset = 0usize;
    while let Some(at) = rest.find('$') {
        lit.push_str(&rest[..at]);
        let after = &rest[at..];
        if let Some(tail) = after.strip_prefix("$${") {
            lit.push_str("${");
            rest = tail;
            offset += at + 3;
            continue;
        }
        if !after.starts_with("${") {
            lit.push('$');
            rest = &after[1..];
            offset += at + 1;
            continue;
        }
        let body_start = offset + at + 2;
        let Some(close) = after.find('}') else {
            return Err(format!(
                "parse error at 1:{}: expected expression but found end of string",
                body_start + 1
            ));
        };
        if !lit.is_empty() {
            parts.push(Part::Lit(std::mem::take(&mut lit)));
        }
        let inner = &after[2..close];
        let lead = inner.len() - inner.trim_start().len();
        parts.push(expr(inner.trim(), body_start + lead + 1)?);
        rest = &after[close + 1..];
        offset += at + close + 1;
    }
    lit.push_str(rest);
    if !lit.is_empty() {
        parts.push(Part::Lit(lit));
    }
    Ok(parts)
}

fn expr(e: &str, col: usize) -> Result<Part, String> {
    if let Some(arg) = e
        .strip_prefix("match")
        .map(str::trim_start)
        .and_then(|r| r.strip_prefix('('))
        .and_then(|r| r.strip_suffix(')'))
    {
        return arg
            .trim()
            .parse::<i64>()
            .map(Part::Match)
            .map_err(|_| format!("1:{col}: match: argument 1 should be type int"));
    }
    let ident = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '*');
    if !e.is_empty() && e.chars().all(ident) && !e.starts_with(|c: char| c.is_ascii_digit()) {
        return Ok(Part::Var(e.to_owned(), col));
    }
    Err(format!(
        "parse error at 1:{col}: unsupported expression {e:?} (the simulated agent understands variables and match(N))"
    ))
}
