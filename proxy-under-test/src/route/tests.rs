//! The route table alone: chain compilation, match precedence (first match wins, fallthrough to
//! the default route), every match kind, splits (weights, proptest of the distribution), prefix
//! rewrite, header order, retry conditions, hashing.

use std::time::Duration;

use http::{HeaderMap, HeaderValue};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::lb::{HashInput, by_hash, request_hash};
use super::retry::{Outcome, backoff};
use super::*;
use crate::agent::types::CompiledChain;

fn chain(v: Value) -> CompiledChain {
    serde_json::from_value(v).unwrap()
}

fn router(routes: &Value) -> RouteTable {
    RouteTable::from_chain(&chain(json!({
        "StartNode": "router:web",
        "Nodes": {
            "router:web": {"Type": "router", "Routes": routes},
            "splitter:web": {"Type": "splitter", "Splits": [
                {"Weight": 90, "NextNode": "resolver:v1",
                 "Definition": {"RequestHeaders": {"Set": {"x-split": "v1"}}}},
                {"Weight": 10, "NextNode": "resolver:v2"}
            ]},
            "resolver:web": {"Type": "resolver", "Resolver": {"Target": "web.default.default.dc1", "ConnectTimeout": "2s",
                "Failover": {"Targets": ["web.default.default.dc2"]}}},
            "resolver:v1": {"Type": "resolver", "Resolver": {"Target": "v1.web.default.default.dc1"}},
            "resolver:v2": {"Type": "resolver", "Resolver": {"Target": "v2.web.default.default.dc1"},
                "LoadBalancer": {"Policy": "ring_hash", "HashPolicies": [{"Field": "header", "FieldValue": "x-user"}]}}
        }
    })))
    .unwrap()
}

fn get<'a>(path: &'a str, headers: &'a HeaderMap) -> RequestView<'a> {
    let (path, query) = match path.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path, None),
    };
    RequestView {
        method: "GET",
        path,
        query,
        headers,
    }
}

fn default_route() -> Value {
    json!({"Definition": {"Match": {"HTTP": {"PathPrefix": "/"}}}, "NextNode": "resolver:web"})
}

#[test]
fn first_match_wins_and_falls_through_to_the_default() {
    let t = router(&json!([
        {"Definition": {"Match": {"HTTP": {"PathPrefix": "/api"}}}, "NextNode": "resolver:v1"},
        {"Definition": {"Match": {"HTTP": {"PathPrefix": "/api/v2"}}}, "NextNode": "resolver:v2"},
        default_route()
    ]));
    let h = HeaderMap::new();
    assert_eq!(
        t.matching(&get("/api/v2/x", &h)),
        Some(0),
        "first match, not longest"
    );
    assert_eq!(t.matching(&get("/other", &h)), Some(2));
    let d = t.decide(2, 0).unwrap();
    assert_eq!(
        d.cluster.targets,
        ["web.default.default.dc1", "web.default.default.dc2"]
    );
    assert_eq!(d.cluster.connect_timeout, Some(Duration::from_secs(2)));
}

#[test]
fn every_match_kind() {
    let t = router(&json!([
        {"Definition": {"Match": {"HTTP": {"PathExact": "/exact"}}}, "NextNode": "resolver:v1"},
        {"Definition": {"Match": {"HTTP": {"PathRegex": "/re/[0-9]+"}}}, "NextNode": "resolver:v1"},
        {"Definition": {"Match": {"HTTP": {"PathPrefix": "/CI", "CaseInsensitive": true}}}, "NextNode": "resolver:v1"},
        {"Definition": {"Match": {"HTTP": {"Header": [{"Name": "x-present", "Present": true}]}}}, "NextNode": "resolver:v1"},
        {"Definition": {"Match": {"HTTP": {"Header": [{"Name": "x-env", "Exact": "prod", "Invert": true},
                                                       {"Name": "x-env", "Present": true}]}}}, "NextNode": "resolver:v1"},
        {"Definition": {"Match": {"HTTP": {"Header": [{"Name": "x-p", "Prefix": "ab"}, {"Name": "x-s", "Suffix": "yz"}]}}}, "NextNode": "resolver:v1"},
        {"Definition": {"Match": {"HTTP": {"Header": [{"Name": "x-r", "Regex": "v[12]"}]}}}, "NextNode": "resolver:v1"},
        {"Definition": {"Match": {"HTTP": {"QueryParam": [{"Name": "q", "Exact": "1"}]}}}, "NextNode": "resolver:v1"},
        {"Definition": {"Match": {"HTTP": {"QueryParam": [{"Name": "p", "Present": true}]}}}, "NextNode": "resolver:v1"},
        {"Definition": {"Match": {"HTTP": {"QueryParam": [{"Name": "r", "Regex": "a+"}]}}}, "NextNode": "resolver:v1"},
        {"Definition": {"Match": {"HTTP": {"Methods": ["POST", "PUT"]}}}, "NextNode": "resolver:v1"},
        default_route()
    ]));
    let none = HeaderMap::new();
    let with = |pairs: &[(&'static str, &'static str)]| {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    };
    assert_eq!(t.matching(&get("/exact", &none)), Some(0));
    assert_eq!(t.matching(&get("/exact/", &none)), Some(11));
    assert_eq!(
        t.matching(&get("/exact?x=1", &none)),
        Some(0),
        "the query is not the path"
    );
    assert_eq!(t.matching(&get("/re/42", &none)), Some(1));
    assert_eq!(
        t.matching(&get("/re/42x", &none)),
        Some(11),
        "regex is anchored"
    );
    assert_eq!(t.matching(&get("/ci/x", &none)), Some(2));
    assert_eq!(t.matching(&get("/", &with(&[("x-present", "")]))), Some(3));
    assert_eq!(t.matching(&get("/", &with(&[("x-env", "dev")]))), Some(4));
    assert_eq!(t.matching(&get("/", &with(&[("x-env", "prod")]))), Some(11));
    assert_eq!(
        t.matching(&get("/", &with(&[("x-p", "abc"), ("x-s", "xyz")]))),
        Some(5)
    );
    assert_eq!(t.matching(&get("/", &with(&[("x-p", "abc")]))), Some(11));
    assert_eq!(t.matching(&get("/", &with(&[("x-r", "v2")]))), Some(6));
    assert_eq!(t.matching(&get("/", &with(&[("x-r", "v22")]))), Some(11));
    assert_eq!(t.matching(&get("/?a=b&q=1", &none)), Some(7));
    assert_eq!(t.matching(&get("/?q=12", &none)), Some(11));
    assert_eq!(t.matching(&get("/?p", &none)), Some(8));
    assert_eq!(t.matching(&get("/?r=aaa", &none)), Some(9));
    let mut post = get("/", &none);
    post.method = "POST";
    assert_eq!(t.matching(&post), Some(10));
}

#[test]
fn an_invalid_regex_route_is_skipped() {
    let t = router(&json!([
        {"Definition": {"Match": {"HTTP": {"PathRegex": "(["}}}, "NextNode": "resolver:v1"},
        default_route()
    ]));
    assert_eq!(t.routes.len(), 1);
}

#[test]
fn splits_resolvers_and_starting_nodes() {
    let t = router(&json!([
        {"Definition": {"Match": {"HTTP": {"PathPrefix": "/"}}}, "NextNode": "splitter:web"}
    ]));
    assert_eq!(t.decide(0, 0).unwrap().cluster.name, "resolver:v1");
    assert_eq!(t.decide(0, 8_999).unwrap().cluster.name, "resolver:v1");
    assert_eq!(t.decide(0, 9_000).unwrap().cluster.name, "resolver:v2");
    assert_eq!(
        t.decide(0, 9_000).unwrap().cluster.lb.policy,
        LbPolicy::Hash
    );
    let s = chain(
        json!({"StartNode": "resolver:web", "Nodes": {"resolver:web":
        {"Type": "resolver", "Resolver": {"Target": "web", "RequestTimeout": "3s"}}}}),
    );
    let t = RouteTable::from_chain(&s).unwrap();
    assert_eq!(t.routes[0].policy.timeout, Some(Duration::from_secs(3)));
}

#[test]
fn destination_policy_rewrite_and_header_order() {
    let t = router(&json!([
        {"Definition": {
            "Match": {"HTTP": {"PathPrefix": "/old"}},
            "Destination": {"PrefixRewrite": "/new", "RequestTimeout": "250ms", "IdleTimeout": 1000000000u64,
                "NumRetries": 3, "RetryOnConnectFailure": true, "RetryOnStatusCodes": [503],
                "RequestHeaders": {"Set": {"x-split": "route"}, "Add": {"x-add": "r"}, "Remove": ["x-gone"]}}},
         "NextNode": "splitter:web"},
        {"Definition": {"Match": {"HTTP": {"PathExact": "/exact"}}, "Destination": {"PrefixRewrite": "/e"}},
         "NextNode": "resolver:web"},
        default_route()
    ]));
    let r = &t.routes[0];
    assert_eq!(r.policy.timeout, Some(Duration::from_millis(250)));
    assert_eq!(r.policy.idle_timeout, Some(Duration::from_secs(1)));
    assert_eq!(
        rewrite(r, "/old/x", Some("a=1")).as_deref(),
        Some("/new/x?a=1")
    );
    assert_eq!(rewrite(&t.routes[1], "/exact", None).as_deref(), Some("/e"));
    assert_eq!(rewrite(&t.routes[2], "/x", None), None);
    let d = t.decide(0, 0).unwrap();
    let mut h = HeaderMap::new();
    h.insert("x-gone", HeaderValue::from_static("1"));
    h.insert("x-add", HeaderValue::from_static("app"));
    d.split.unwrap().request_headers.apply(&mut h);
    r.policy.request_headers.apply(&mut h);
    assert_eq!(
        h["x-split"], "route",
        "the route's Set wins over the split's"
    );
    assert!(h.get("x-gone").is_none());
    assert_eq!(h.get_all("x-add").iter().count(), 2, "Add appends");
    let p = r.policy.retry.as_ref().unwrap();
    assert_eq!(p.num_retries, 3);
    let none = HeaderMap::new();
    assert!(p.retriable(Outcome::ConnectFailure));
    assert!(p.retriable(Outcome::Response(503, &none)));
    assert!(!p.retriable(Outcome::Response(500, &none)));
    assert!(!p.retriable(Outcome::Reset));
}

#[test]
fn retry_conditions_and_backoff() {
    let d = |v: Value| RetryPolicy::new(&serde_json::from_value(v).unwrap());
    assert_eq!(d(json!({})), None, "no retry features, no policy");
    let p = d(json!({"RetryOn": ["5xx"]})).unwrap();
    assert_eq!(p.num_retries, 1, "Envoy's default");
    let none = HeaderMap::new();
    assert!(p.retriable(Outcome::Reset) && p.retriable(Outcome::Response(500, &none)));
    assert!(!p.retriable(Outcome::Response(404, &none)));
    let g = d(json!({"RetryOn": ["unavailable"], "NumRetries": 2})).unwrap();
    let mut grpc = HeaderMap::new();
    grpc.insert("grpc-status", HeaderValue::from_static("14"));
    assert!(g.retriable(Outcome::Response(200, &grpc)));
    assert_eq!(backoff(1, 0.999_999).as_millis(), 24);
    assert!(backoff(10, 0.999_999) < Duration::from_millis(250));
}

fn input(h: &HeaderMap) -> HashInput<'_> {
    HashInput {
        headers: h,
        query: None,
        source: None,
    }
}

#[test]
fn hash_policies_are_stable_and_generate_cookies() {
    let lb = Lb::new(Some(&serde_json::from_value(json!({"Policy": "maglev", "HashPolicies": [
        {"Field": "cookie", "FieldValue": "sticky", "CookieConfig": {"TTL": "60s", "Path": "/"}, "Terminal": true},
        {"SourceIP": true}
    ]})).unwrap()));
    let mut h = HeaderMap::new();
    let (h1, c) = request_hash(&lb, input(&h), "abc");
    assert_eq!(
        c.as_deref(),
        Some("sticky=\"abc\"; Max-Age=60; Path=/; HttpOnly")
    );
    h.insert(
        http::header::COOKIE,
        HeaderValue::from_static("a=b; sticky=abc"),
    );
    let (h2, c2) = request_hash(&lb, input(&h), "zzz");
    assert_eq!(
        (h1, c2),
        (h2, None),
        "the generated cookie hashes as the later requests carrying it"
    );
    let keys: Vec<String> = (0..5).map(|i| format!("ep{i}")).collect();
    assert_eq!(by_hash(h1.unwrap(), &keys), by_hash(h1.unwrap(), &keys));
}

proptest! {
    #[test]
    fn split_weights_partition_the_rolls(ws in proptest::collection::vec(0u32..5_000, 1..6), roll in 0u32..TOTAL_WEIGHT) {
        let splits: Vec<Split> = ws.iter().enumerate().map(|(i, w)| Split {
            weight: *w,
            cluster: format!("c{i}"),
            request_headers: HeaderOps::default(),
            response_headers: HeaderOps::default(),
        }).collect();
        let chosen = pick_split(&splits, roll).unwrap();
        let total: u32 = ws.iter().sum();
        if roll < total {
            // The chosen split's interval contains the roll.
            let i: usize = chosen.cluster[1..].parse().unwrap();
            let start: u32 = ws[..i].iter().sum();
            prop_assert!(start <= roll && roll < start + ws[i]);
        }
    }

    #[test]
    fn first_matching_route_wins(prefixes in proptest::collection::vec("/[a-c]{0,2}", 1..6), path in "/[a-c]{0,3}") {
        let mut routes: Vec<Value> = prefixes.iter().map(|p| json!({
            "Definition": {"Match": {"HTTP": {"PathPrefix": p}}}, "NextNode": "resolver:v1"})).collect();
        routes.push(default_route());
        let t = router(&Value::Array(routes));
        let h = HeaderMap::new();
        let expected = prefixes.iter().position(|p| path.starts_with(p.as_str())).unwrap_or(prefixes.len());
        prop_assert_eq!(t.matching(&get(&path, &h)), Some(expected));
    }

    #[test]
    fn rendezvous_moves_only_the_removed_endpoints_keys(hash in any::<u64>(), n in 2usize..8, gone in 0usize..8) {
        let keys: Vec<String> = (0..n).map(|i| format!("ep{i}")).collect();
        let gone = gone % n;
        let before = by_hash(hash, &keys).unwrap();
        let fewer: Vec<String> = keys.iter().enumerate().filter(|(i, _)| *i != gone).map(|(_, k)| k.clone()).collect();
        let after = &fewer[by_hash(hash, &fewer).unwrap()];
        if before != gone {
            prop_assert_eq!(after, &keys[before]);
        }
    }
}
