//! Unit tests of the redirect module: the ruleset against Consul's own expected rules
//! (`sdk/iptables/iptables_test.go`), CIDR validation, port derivation from registrations.
//! The command line and the iptables runner are tested in `tests/cli.rs` and `tests/exec.rs`.

mod cli;
mod exec;

use serde_json::json;

use super::*;

fn lines(config: &RedirectConfig) -> Vec<String> {
    rules(config).iter().map(ToString::to_string).collect()
}

/// The rules every Consul test case shares, for proxy UID 123 and ports 20000 / `outbound`.
fn consul_base(outbound: u16) -> Vec<String> {
    [
        "iptables -t nat -N CONSUL_PROXY_INBOUND",
        "iptables -t nat -N CONSUL_PROXY_IN_REDIRECT",
        "iptables -t nat -N CONSUL_PROXY_OUTPUT",
        "iptables -t nat -N CONSUL_PROXY_REDIRECT",
        &format!(
            "iptables -t nat -A CONSUL_PROXY_REDIRECT -p tcp -j REDIRECT --to-port {outbound}"
        ),
        "iptables -t nat -A OUTPUT -p tcp -j CONSUL_PROXY_OUTPUT",
        "iptables -t nat -A CONSUL_PROXY_OUTPUT -m owner --uid-owner 123 -j RETURN",
        "iptables -t nat -A CONSUL_PROXY_OUTPUT -d 127.0.0.1/32 -j RETURN",
        "iptables -t nat -A CONSUL_PROXY_OUTPUT -j CONSUL_PROXY_REDIRECT",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

fn consul_inbound() -> Vec<String> {
    [
        "iptables -t nat -A CONSUL_PROXY_IN_REDIRECT -p tcp -j REDIRECT --to-port 20000",
        "iptables -t nat -A PREROUTING -p tcp -j CONSUL_PROXY_INBOUND",
        "iptables -t nat -A CONSUL_PROXY_INBOUND -p tcp -j CONSUL_PROXY_IN_REDIRECT",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn default_outbound_port_matches_consul() {
    // Consul: "no proxy outbound port provided".
    let mut want = consul_base(15001);
    want.extend(consul_inbound());
    assert_eq!(lines(&RedirectConfig::new(123, 20000)), want);
}

#[test]
fn outbound_port_matches_consul() {
    let mut want = consul_base(21000);
    want.extend(consul_inbound());
    assert_eq!(
        lines(&RedirectConfig::new(123, 20000).with_outbound_port(21000)),
        want
    );
}

#[test]
fn exclusions_match_consul_order() {
    let base = RedirectConfig::new(123, 20000).with_outbound_port(21000);
    // "exclude inbound ports is set": inserted after the inbound rules.
    let c = base.clone().with_exclusions(Exclusions {
        inbound_ports: vec![22000, 22500],
        ..Default::default()
    });
    let mut want = consul_base(21000);
    want.extend(consul_inbound());
    want.extend(strings(&[
        "iptables -t nat -I CONSUL_PROXY_INBOUND -p tcp --dport 22000 -j RETURN",
        "iptables -t nat -I CONSUL_PROXY_INBOUND -p tcp --dport 22500 -j RETURN",
    ]));
    assert_eq!(lines(&c), want);

    // "exclude outbound ports is set": inserted before the inbound rules.
    let c = base.clone().with_exclusions(Exclusions {
        outbound_ports: vec![22000, 22500],
        ..Default::default()
    });
    let mut want = consul_base(21000);
    want.extend(strings(&[
        "iptables -t nat -I CONSUL_PROXY_OUTPUT -p tcp --dport 22000 -j RETURN",
        "iptables -t nat -I CONSUL_PROXY_OUTPUT -p tcp --dport 22500 -j RETURN",
    ]));
    want.extend(consul_inbound());
    assert_eq!(lines(&c), want);

    // "exclude outbound CIDRs is set" (a bare address stays bare, like Consul's).
    let c = base.clone().with_exclusions(Exclusions {
        outbound_cidrs: vec!["1.1.1.1".parse().unwrap(), "2.2.2.2/24".parse().unwrap()],
        ..Default::default()
    });
    let mut want = consul_base(21000);
    want.extend(strings(&[
        "iptables -t nat -I CONSUL_PROXY_OUTPUT -d 1.1.1.1 -j RETURN",
        "iptables -t nat -I CONSUL_PROXY_OUTPUT -d 2.2.2.2/24 -j RETURN",
    ]));
    want.extend(consul_inbound());
    assert_eq!(lines(&c), want);

    // "exclude UIDs is set".
    let c = base.with_exclusions(Exclusions {
        uids: vec![456, 789],
        ..Default::default()
    });
    let mut want = consul_base(21000);
    want.extend(strings(&[
        "iptables -t nat -I CONSUL_PROXY_OUTPUT -m owner --uid-owner 456 -j RETURN",
        "iptables -t nat -I CONSUL_PROXY_OUTPUT -m owner --uid-owner 789 -j RETURN",
    ]));
    want.extend(consul_inbound());
    assert_eq!(lines(&c), want);
}

/// Every option at once, as `-dry-run` prints it.
fn full_config() -> RedirectConfig {
    RedirectConfig::new(5995, 21000)
        .with_outbound_port(15001)
        .with_exclusions(Exclusions {
            inbound_ports: vec![9102, 22],
            outbound_ports: vec![8500],
            outbound_cidrs: vec![
                "10.0.0.0/8".parse().unwrap(),
                "fd00::/8".parse().unwrap(),
                "192.168.1.1".parse().unwrap(),
            ],
            uids: vec![100, 0],
        })
}

#[test]
fn full_dry_run_snapshot() {
    insta::assert_snapshot!(render(&rules(&full_config())));
}

#[test]
fn comment_tags_every_rule_but_chain_creation() {
    let config = full_config().with_comment("web-sidecar");
    config.validate().unwrap();
    for rule in rules(&config) {
        let tagged = rule
            .to_string()
            .ends_with(" -m comment --comment web-sidecar");
        assert_eq!(tagged, rule.op != Op::NewChain, "{rule}");
    }
    for bad in ["", "two words", "quote\"", "x".repeat(201).as_str()] {
        let err = RedirectConfig::new(1, 2)
            .with_comment(bad)
            .validate()
            .unwrap_err();
        assert_eq!(err.kind(), "bad-flag", "{bad:?}");
    }
}

#[test]
fn builtin_jumps_are_the_two_consul_jumps() {
    let jumps: Vec<String> = rules(&full_config())
        .iter()
        .filter(|r| r.is_builtin_jump())
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        jumps,
        [
            "iptables -t nat -A OUTPUT -p tcp -j CONSUL_PROXY_OUTPUT",
            "iptables -t nat -A PREROUTING -p tcp -j CONSUL_PROXY_INBOUND",
        ]
    );
}

#[test]
fn remove_plan_undoes_the_jumps_then_the_chains() {
    let plan = render(&remove_plan());
    assert_eq!(
        plan,
        "iptables -t nat -D OUTPUT -p tcp -j CONSUL_PROXY_OUTPUT\n\
         iptables -t nat -D PREROUTING -p tcp -j CONSUL_PROXY_INBOUND\n\
         iptables -t nat -F CONSUL_PROXY_INBOUND\n\
         iptables -t nat -F CONSUL_PROXY_IN_REDIRECT\n\
         iptables -t nat -F CONSUL_PROXY_OUTPUT\n\
         iptables -t nat -F CONSUL_PROXY_REDIRECT\n\
         iptables -t nat -X CONSUL_PROXY_INBOUND\n\
         iptables -t nat -X CONSUL_PROXY_IN_REDIRECT\n\
         iptables -t nat -X CONSUL_PROXY_OUTPUT\n\
         iptables -t nat -X CONSUL_PROXY_REDIRECT\n"
    );
}

#[test]
fn cidrs_are_validated() {
    for ok in [
        "10.0.0.0/8",
        "1.1.1.1",
        "0.0.0.0/0",
        "1.2.3.4/32",
        "::/0",
        "fd00::/8",
        "::1",
    ] {
        let c: Cidr = ok.parse().unwrap_or_else(|e| panic!("{ok}: {e}"));
        assert_eq!(c.to_string(), ok);
    }
    assert!(!"fd00::/8".parse::<Cidr>().unwrap().is_ipv4());
    for bad in [
        "",
        "10.0.0.0/33",
        "::/129",
        "10.0.0/8",
        "10.0.0.0/",
        "10.0.0.0/+8",
        "10.0.0.0/8/8",
        "host.example",
        "10.0.0.0/-1",
        " 10.0.0.0/8",
    ] {
        let err = bad.parse::<Cidr>().unwrap_err();
        assert_eq!(err.kind(), "bad-flag", "{bad:?}");
        assert!(err.to_string().contains("invalid CIDR"), "{err}");
    }
}

fn sidecar(proxy: serde_json::Value) -> serde_json::Value {
    let mut svc = json!({"Kind": "connect-proxy", "ID": "web-sidecar-proxy",
                         "Service": "web-sidecar-proxy", "Port": 21000});
    svc["Proxy"] = proxy;
    svc
}

#[test]
fn ports_from_a_transparent_registration() {
    // As the agent returns it (reference §8 example).
    let svc = sidecar(
        json!({"DestinationServiceName": "web", "Mode": "transparent",
        "TransparentProxy": {"OutboundListenerPort": 15002}, "Config": {"protocol": "http"},
        "MeshGateway": {}, "Expose": {}}),
    );
    let c = RedirectConfig::from_registration(&svc, 5995, Exclusions::default()).unwrap();
    assert_eq!(
        c,
        RedirectConfig::new(5995, 21000).with_outbound_port(15002)
    );
}

#[test]
fn outbound_port_defaults_to_15001() {
    for tp in [json!(null), json!({}), json!({"OutboundListenerPort": 0})] {
        let svc = sidecar(json!({"Mode": "transparent", "TransparentProxy": tp}));
        let c = RedirectConfig::from_registration(&svc, 1, Exclusions::default()).unwrap();
        assert_eq!(c.outbound_port, 15001, "{tp}");
    }
}

#[test]
fn bind_port_overrides_port_weakly_decoded() {
    for (bind, want) in [
        (json!(21500), 21500),
        (json!("21600"), 21600),
        (json!(0), 21000),
        (json!(""), 21000),
        (json!(null), 21000),
    ] {
        let svc = sidecar(json!({"Config": {"bind_port": bind}}));
        let c = RedirectConfig::from_registration(&svc, 1, Exclusions::default()).unwrap();
        assert_eq!(c.inbound_port, want, "{bind}");
    }
    for bad in [json!("x"), json!(70000), json!(-1), json!(true)] {
        let svc = sidecar(json!({"Config": {"bind_port": bad}}));
        let err = RedirectConfig::from_registration(&svc, 1, Exclusions::default()).unwrap_err();
        assert_eq!(err.kind(), "bad-registration");
        assert!(
            err.to_string().starts_with("failed parsing Proxy.Config:"),
            "{err}"
        );
    }
}

#[test]
fn metrics_stats_and_expose_ports_are_excluded_from_inbound() {
    let svc = sidecar(json!({
        "Config": {"envoy_prometheus_bind_addr": "0.0.0.0:9100",
                   "envoy_stats_bind_addr": "localhost:9101",
                   "metrics_bind_addr": "127.0.0.1:9102"},
        "Expose": {"Checks": true, "Paths": [
            {"ListenerPort": 21500, "Path": "/health", "LocalPathPort": 8080},
            {"ListenerPort": 21501, "Path": "/ready", "LocalPathPort": 8080}]}}));
    let extra = Exclusions {
        inbound_ports: vec![22],
        outbound_ports: vec![8500],
        outbound_cidrs: vec!["10.0.0.0/8".parse().unwrap()],
        uids: vec![7],
    };
    let c = RedirectConfig::from_registration(&svc, 1, extra.clone()).unwrap();
    assert_eq!(
        c.exclude.inbound_ports,
        [9100, 9101, 9102, 21500, 21501, 22]
    );
    assert_eq!(c.exclude.outbound_ports, extra.outbound_ports);
    assert_eq!(c.exclude.outbound_cidrs, extra.outbound_cidrs);
    assert_eq!(c.exclude.uids, extra.uids);
    // IPv6 and empty-host forms.
    let svc = sidecar(json!({"Config": {"metrics_bind_addr": "[::1]:9200",
                                        "envoy_stats_bind_addr": ":9201"}}));
    let c = RedirectConfig::from_registration(&svc, 1, Exclusions::default()).unwrap();
    assert_eq!(c.exclude.inbound_ports, [9201, 9200]);
    for bad in ["9102", "127.0.0.1", "127.0.0.1:x", "::1:80"] {
        let svc = sidecar(json!({"Config": {"metrics_bind_addr": bad}}));
        let err = RedirectConfig::from_registration(&svc, 1, Exclusions::default()).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("failed parsing host and port from metrics_bind_addr"),
            "{bad}: {err}"
        );
    }
}

#[test]
fn non_proxies_and_missing_ports_are_refused() {
    let typical = json!({"ID": "web", "Service": "web", "Port": 8080});
    let err = RedirectConfig::from_registration(&typical, 1, Exclusions::default()).unwrap_err();
    assert_eq!(err.kind(), "bad-registration");
    assert_eq!(err.to_string(), "service web is not a proxy service");

    let socket = json!({"Kind": "connect-proxy", "ID": "s", "Port": 0, "Proxy": {}});
    let err = RedirectConfig::from_registration(&socket, 1, Exclusions::default()).unwrap_err();
    assert_eq!(err.kind(), "bad-registration");
    assert!(
        err.to_string().contains("ProxyInboundPort is required"),
        "{err}"
    );

    let garbage = json!({"Port": "x"});
    let err = RedirectConfig::from_registration(&garbage, 1, Exclusions::default()).unwrap_err();
    assert_eq!(err.kind(), "bad-registration");
}

#[test]
fn non_transparent_proxies_are_accepted_like_consul() {
    // Consul's redirect-traffic only requires a Proxy block; Mode is not checked.
    let svc = sidecar(json!({"Mode": ""}));
    let c = RedirectConfig::from_registration(&svc, 1, Exclusions::default()).unwrap();
    assert_eq!((c.inbound_port, c.outbound_port), (21000, 15001));
}

#[test]
fn error_kinds_are_stable() {
    let errors = [
        RedirectError::NotInstalled { tried: vec![] },
        RedirectError::NotPermitted {
            command: String::new(),
            stderr: String::new(),
        },
        RedirectError::Failed {
            command: String::new(),
            status: Some(2),
            stderr: String::new(),
        },
        RedirectError::Agent(AgentError::Timeout),
        RedirectError::BadRegistration(String::new()),
        RedirectError::BadFlag(String::new()),
    ];
    let kinds: Vec<&str> = errors.iter().map(RedirectError::kind).collect();
    assert_eq!(
        kinds,
        [
            "not-installed",
            "not-permitted",
            "failed",
            "agent",
            "bad-registration",
            "bad-flag"
        ]
    );
}
