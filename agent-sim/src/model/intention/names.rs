//! Parsing of the service names the intention endpoints take in query parameters
//! (`svc`, `ns/svc`, `ap/ns/svc`, `peer:p/svc`) and CE's namespace/partition checks.

/// A parsed `source`, `destination` or `name` query value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub(crate) peer: String,
    pub(crate) partition: String,
    pub(crate) namespace: String,
    pub(crate) name: String,
}

/// `parseIntentionStringComponent`.
pub(crate) fn parse_component(input: &str, allow_peer: bool) -> Result<Parsed, String> {
    if input.starts_with("peer:") && !allow_peer {
        return Err("cannot specify a peer here".into());
    }
    let parts: Vec<&str> = input.split('/').collect();
    let owned = |s: &str| s.to_owned();
    match parts.as_slice() {
        [name] if name.starts_with("peer:") => {
            Err("need to specify the service name as well".into())
        }
        [name] => Ok(Parsed {
            name: owned(name),
            ..Parsed::default()
        }),
        [first, name] => Ok(match first.strip_prefix("peer:") {
            Some(peer) => Parsed {
                peer: owned(peer),
                name: owned(name),
                ..Parsed::default()
            },
            None => Parsed {
                namespace: owned(first),
                name: owned(name),
                ..Parsed::default()
            },
        }),
        [first, ns, name] => Ok(match first.strip_prefix("peer:") {
            Some(peer) => Parsed {
                peer: owned(peer),
                namespace: owned(ns),
                name: owned(name),
                ..Parsed::default()
            },
            None => Parsed {
                partition: owned(first),
                namespace: owned(ns),
                name: owned(name),
                ..Parsed::default()
            },
        }),
        _ => Err("input can contain at most two '/'".into()),
    }
}

/// `validateEnterpriseIntentionNamespace` (CE): only empty or `default` (any case).
pub(crate) fn check_namespace(ns: &str) -> Result<(), &'static str> {
    if ns.is_empty() || ns.eq_ignore_ascii_case("default") {
        Ok(())
    } else {
        Err("Namespaces is a Consul Enterprise feature")
    }
}

/// `validateEnterpriseIntentionPartition` (CE): only empty or `default` (any case).
pub(crate) fn check_partition(ap: &str) -> Result<(), &'static str> {
    if ap.is_empty() || ap.eq_ignore_ascii_case("default") {
        Ok(())
    } else {
        Err("Partitions is a Consul Enterprise feature")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        let p = |s| parse_component(s, true).unwrap();
        assert_eq!(p("web").name, "web");
        assert_eq!(
            p("ns1/web"),
            Parsed {
                namespace: "ns1".into(),
                name: "web".into(),
                ..Parsed::default()
            }
        );
        assert_eq!(
            p("ap/ns/web"),
            Parsed {
                partition: "ap".into(),
                namespace: "ns".into(),
                name: "web".into(),
                ..Parsed::default()
            }
        );
        assert_eq!(
            p("peer:east/web"),
            Parsed {
                peer: "east".into(),
                name: "web".into(),
                ..Parsed::default()
            }
        );
        assert_eq!(
            parse_component("peer:east", true).unwrap_err(),
            "need to specify the service name as well"
        );
        assert_eq!(
            parse_component("peer:east/web", false).unwrap_err(),
            "cannot specify a peer here"
        );
        assert_eq!(
            parse_component("a/b/c/d", false).unwrap_err(),
            "input can contain at most two '/'"
        );
    }

    #[test]
    fn ce_accepts_only_the_default_namespace_and_partition() {
        assert!(check_namespace("").is_ok());
        assert!(check_namespace("Default").is_ok());
        assert_eq!(
            check_namespace("*"),
            Err("Namespaces is a Consul Enterprise feature")
        );
        assert_eq!(
            check_partition("other"),
            Err("Partitions is a Consul Enterprise feature")
        );
    }
}
