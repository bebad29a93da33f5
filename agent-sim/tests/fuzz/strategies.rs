//! Proptest strategies for HTTP requests: methods (odd ones too), every route with random or
//! encoded segments, query strings (`index`, `wait`, `filter`, `dc`, `ns`, `near`, `cached`,
//! `stale`, repeated keys), token headers and junk headers.

use axum::http::Method;
use proptest::prelude::*;
use proptest::sample::select;

use super::support::{ORDINARY, ROOT, Req, encode};

/// Every route of the API, `{}` standing for a fuzzed segment.
pub(crate) const ROUTES: &[&str] = &[
    "/v1/agent/self",
    "/v1/agent/members",
    "/v1/agent/services",
    "/v1/agent/checks",
    "/v1/agent/service/{}",
    "/v1/agent/service/register",
    "/v1/agent/service/deregister/{}",
    "/v1/agent/check/register",
    "/v1/agent/check/deregister/{}",
    "/v1/agent/check/pass/{}",
    "/v1/agent/check/warn/{}",
    "/v1/agent/check/fail/{}",
    "/v1/agent/check/update/{}",
    "/v1/agent/connect/authorize",
    "/v1/agent/connect/ca/roots",
    "/v1/agent/connect/ca/leaf/{}",
    "/v1/catalog/datacenters",
    "/v1/catalog/nodes",
    "/v1/catalog/services",
    "/v1/catalog/service/{}",
    "/v1/catalog/connect/{}",
    "/v1/catalog/register",
    "/v1/catalog/deregister",
    "/v1/health/service/{}",
    "/v1/health/connect/{}",
    "/v1/config",
    "/v1/config/{}",
    "/v1/config/{}/{}",
    "/v1/connect/ca/roots",
    "/v1/connect/ca/configuration",
    "/v1/connect/intentions",
    "/v1/connect/intentions/{}",
    "/v1/connect/intentions/exact",
    "/v1/connect/intentions/match",
    "/v1/connect/intentions/check",
    "/v1/discovery-chain/{}",
    "/v1/status/leader",
    "/v1/status/peers",
    "/v1/{}",
    "/{}",
];

/// Methods: the usual ones weighted up, plus odd and invented ones.
pub(crate) fn method() -> impl Strategy<Value = Method> {
    prop_oneof![
        6 => select(vec![Method::GET, Method::PUT, Method::POST, Method::DELETE]),
        1 => select(vec![Method::HEAD, Method::OPTIONS, Method::PATCH, Method::TRACE, Method::CONNECT]),
        1 => "[A-Z]{1,12}".prop_map(|m| Method::from_bytes(m.as_bytes()).unwrap_or(Method::GET)),
    ]
}

/// A path segment: a known name, `..`, `%00`, encoded junk, or a very long one.
pub(crate) fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => select(vec![
            "web", "db", "web-sidecar-proxy", "db-sidecar-proxy", "service:web-sidecar-proxy",
            "service-defaults", "proxy-defaults", "service-intentions", "service-resolver",
            "global", "kind/connect-proxy", "agent/x", "server/y",
        ]).prop_map(str::to_owned),
        2 => select(vec![
            "..", ".", "%00", "%2F", "%2e%2e", "%ZZ", "%", "a%20b", "%C3%28", "x/../../etc/passwd",
            "", "//", "%FF%FE", "\u{1F600}",
        ]).prop_map(|s| s.replace('\u{1F600}', "%F0%9F%98%80")),
        2 => any::<String>().prop_map(|s| encode(&s)),
        1 => (1usize..20_000).prop_map(|n| "a".repeat(n)),
    ]
}

/// A route with its placeholders filled.
pub(crate) fn path() -> impl Strategy<Value = String> {
    (select(ROUTES), prop::collection::vec(segment(), 2)).prop_map(|(route, segs)| {
        let mut out = String::new();
        let mut segs = segs.into_iter();
        for (i, part) in route.split("{}").enumerate() {
            if i > 0 {
                out.push_str(&segs.next().unwrap_or_default());
            }
            out.push_str(part);
        }
        out
    })
}

/// A Go-ish duration, valid or not: bad units, huge, negative.
pub(crate) fn wait() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => (0u64..50, select(vec!["ns", "us", "µs", "ms", "s"])).prop_map(|(n, u)| format!("{n}{u}")),
        2 => select(vec![
            "10", "abc", "-5s", "-1ns", "1d", "1h1h", "1.5s", ".s", "9223372036854775807ns",
            "9223372036854775808ns", "2562047h", "99999999999h", "1e3s", "0", "+3s", "1.h",
            "10m", "601s", "0x10s", "", " 1s",
        ]).prop_map(str::to_owned),
        1 => any::<String>(),
    ]
}

/// `index`: numbers around the interesting edges, negative, huge and garbage.
pub(crate) fn index() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => (0u64..100).prop_map(|n| n.to_string()),
        1 => any::<u64>().prop_map(|n| n.to_string()),
        1 => select(vec![
            "-1", "18446744073709551615", "18446744073709551616", "1e3", "0x10", "+5", "abc", "",
            "00000000000000000000001", " 1",
        ]).prop_map(str::to_owned),
    ]
}

/// A bexpr-ish filter: selectors, operators, values, `and`/`or`/`not`, parentheses; or junk.
pub(crate) fn filter() -> impl Strategy<Value = String> {
    let selector = select(vec![
        "Service",
        "ServiceName",
        "Service.Service",
        "Node.Node",
        "Tags",
        "Meta.env",
        "Port",
        "Kind",
        "Checks.Status",
        "Proxy.DestinationServiceName",
        "Address",
        "Nope",
        "Meta",
        "SourceName",
        "DestinationName",
        "Action",
        "Service.Tags",
        "\"weird sel\"",
    ]);
    let op = select(vec![
        "==",
        "!=",
        "contains",
        "not contains",
        "in",
        "not in",
        "matches",
        "not matches",
        "is empty",
        "is not empty",
        "=",
        "<",
        "~=",
    ]);
    let value = prop_oneof![
        select(vec![
            "\"web\"", "\"db\"", "80", "`x`", "\"[a-\"", "\"\"", "true", "\"\\q\""
        ])
        .prop_map(str::to_owned),
        "[a-z0-9]{0,8}".prop_map(|s| format!("\"{s}\"")),
    ];
    let leaf = (selector, op, value).prop_map(|(s, o, v)| {
        if o.starts_with("is") {
            format!("{s} {o}")
        } else if o.contains("in") && !o.contains("contains") {
            format!("{v} {o} {s}")
        } else {
            format!("{s} {o} {v}")
        }
    });
    let expr = leaf.prop_recursive(4, 16, 3, |inner| {
        prop_oneof![
            (
                inner.clone(),
                select(vec![" and ", " or ", " AND ", " && "]),
                inner.clone()
            )
                .prop_map(|(a, o, b)| format!("{a}{o}{b}")),
            inner.clone().prop_map(|e| format!("not {e}")),
            inner.prop_map(|e| format!("({e})")),
        ]
    });
    prop_oneof![
        6 => expr,
        1 => any::<String>(),
        1 => (1usize..5000).prop_map(|n| format!("{}Service == \"x\"{}", "(".repeat(n), ")".repeat(n))),
        1 => (1usize..5000).prop_map(|n| "not ".repeat(n) + "Service == \"x\""),
    ]
}

/// One query parameter.
pub(crate) fn param() -> impl Strategy<Value = (String, String)> {
    let flag = select(vec![
        "stale",
        "consistent",
        "cached",
        "pretty",
        "leader",
        "connect",
        "merge-central-config",
        "passing",
        "local-only",
    ]);
    prop_oneof![
        2 => index().prop_map(|v| ("index".to_owned(), v)),
        2 => wait().prop_map(|v| ("wait".to_owned(), v)),
        2 => filter().prop_map(|v| ("filter".to_owned(), v)),
        1 => flag.prop_map(|f| (f.to_owned(), String::new())),
        1 => (select(vec!["dc", "datacenter", "ns", "partition", "peer", "near", "node-meta",
                "tag", "hash", "by", "name", "source", "destination", "token", "max_stale",
                "sg", "format", "cached", "stale"]), segment())
            .prop_map(|(k, v)| (k.to_owned(), v)),
        1 => (any::<String>(), any::<String>()),
    ]
}

/// A query string (raw, keys and values percent-encoded; repeated keys allowed).
pub(crate) fn query() -> impl Strategy<Value = String> {
    prop::collection::vec(param(), 0..5).prop_map(|ps| {
        ps.iter()
            .map(|(k, v)| {
                if v.is_empty() && !k.is_empty() {
                    encode(k)
                } else {
                    format!("{}={}", encode(k), encode(v))
                }
            })
            .collect::<Vec<_>>()
            .join("&")
    })
}

/// Token and junk headers.
pub(crate) fn headers() -> impl Strategy<Value = Vec<(String, Vec<u8>)>> {
    let token = select(vec![
        ROOT,
        ORDINARY,
        "anonymous",
        "not-a-token",
        "",
        " ",
        "\u{7f}",
    ]);
    let one = prop_oneof![
        3 => token.clone().prop_map(|t| ("X-Consul-Token".to_owned(), t.as_bytes().to_vec())),
        2 => (select(vec!["Bearer ", "bearer ", "Basic ", "Bearer", "Bearer  "]), token)
            .prop_map(|(s, t)| ("Authorization".to_owned(), format!("{s}{t}").into_bytes())),
        1 => (select(vec!["Cache-Control", "Content-Type", "Content-Length", "Transfer-Encoding",
                "Accept-Encoding", "X-Forwarded-For", "Host", "Expect"]), any::<String>())
            .prop_map(|(n, v)| (n.to_owned(), v.into_bytes())),
        1 => ("[a-zA-Z0-9-]{1,30}", prop::collection::vec(any::<u8>(), 0..64)),
        1 => (1usize..200_000).prop_map(|n| ("X-Huge".to_owned(), vec![b'h'; n])),
    ];
    prop::collection::vec(one, 0..4)
}

/// A whole request without a body.
pub(crate) fn request() -> impl Strategy<Value = Req> {
    (method(), path(), query(), headers()).prop_map(|(m, p, q, h)| {
        let uri = if q.is_empty() { p } else { format!("{p}?{q}") };
        let mut r = Req::new(m, uri);
        r.headers = h;
        r
    })
}
