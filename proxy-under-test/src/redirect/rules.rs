//! The ruleset as data: [`rules`] turns a [`RedirectConfig`] into Consul's ordered iptables
//! invocations (pure, no I/O), [`render`] prints them one shell line each for `-dry-run`.

use std::fmt;

use super::config::RedirectConfig;

/// Intercepts inbound traffic (jumped to from `PREROUTING`).
pub const INBOUND_CHAIN: &str = "CONSUL_PROXY_INBOUND";
/// Redirects inbound traffic to the proxy's inbound listener.
pub const INBOUND_REDIRECT_CHAIN: &str = "CONSUL_PROXY_IN_REDIRECT";
/// Intercepts outbound traffic (jumped to from `OUTPUT`).
pub const OUTPUT_CHAIN: &str = "CONSUL_PROXY_OUTPUT";
/// Redirects outbound traffic to the proxy's outbound listener.
pub const OUTPUT_REDIRECT_CHAIN: &str = "CONSUL_PROXY_REDIRECT";

/// The chains this command owns, in Consul's creation order.
pub(crate) const OWN_CHAINS: [&str; 4] = [
    INBOUND_CHAIN,
    INBOUND_REDIRECT_CHAIN,
    OUTPUT_CHAIN,
    OUTPUT_REDIRECT_CHAIN,
];

/// The table every rule lives in.
pub(crate) const TABLE: &str = "nat";

/// What an invocation does to its chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `-N`: create the chain (no arguments).
    NewChain,
    /// `-A`: append.
    Append,
    /// `-I`: insert at the top.
    Insert,
    /// `-D`: delete the matching rule.
    Delete,
    /// `-F`: flush the chain.
    Flush,
    /// `-X`: delete the (empty, unreferenced) chain.
    DeleteChain,
}

impl Op {
    /// The iptables option.
    pub fn flag(self) -> &'static str {
        match self {
            Self::NewChain => "-N",
            Self::Append => "-A",
            Self::Insert => "-I",
            Self::Delete => "-D",
            Self::Flush => "-F",
            Self::DeleteChain => "-X",
        }
    }
}

/// One iptables invocation: `iptables -t <table> <op> <chain> <args...>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Always `nat`.
    pub table: &'static str,
    /// The operation.
    pub op: Op,
    /// The chain operated on.
    pub chain: String,
    /// The rule specification (match and target).
    pub args: Vec<String>,
}

impl Rule {
    fn new(op: Op, chain: &str, args: &[&str]) -> Self {
        Self {
            table: TABLE,
            op,
            chain: chain.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
        }
    }

    /// The arguments after the program name.
    pub fn argv(&self) -> Vec<String> {
        let mut v = vec![
            "-t".to_owned(),
            self.table.to_owned(),
            self.op.flag().to_owned(),
            self.chain.clone(),
        ];
        v.extend(self.args.iter().cloned());
        v
    }

    /// Whether this adds a jump from a built-in chain (`OUTPUT`, `PREROUTING`), which
    /// [`super::apply`] adds only when absent.
    pub fn is_builtin_jump(&self) -> bool {
        self.op == Op::Append && !OWN_CHAINS.contains(&self.chain.as_str())
    }
}

impl fmt::Display for Rule {
    /// `iptables -t nat -A CHAIN ...`: arguments never need shell quoting (chain names, numbers,
    /// CIDRs and a validated comment).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "iptables {}", self.argv().join(" "))
    }
}

/// Consul's ruleset for `config`, in order (see the module docs). IPv6 CIDRs produce no rule.
pub fn rules(config: &RedirectConfig) -> Vec<Rule> {
    let tag: Vec<String> = match &config.comment {
        Some(c) => vec!["-m".into(), "comment".into(), "--comment".into(), c.clone()],
        None => Vec::new(),
    };
    let rule = |op: Op, chain: &str, args: &[&str]| {
        let mut r = Rule::new(op, chain, args);
        if op != Op::NewChain {
            r.args.extend(tag.iter().cloned());
        }
        r
    };
    let proxy_uid = config.proxy_uid.to_string();
    let outbound = config.outbound_port.to_string();
    let inbound = config.inbound_port.to_string();
    let mut out: Vec<Rule> = OWN_CHAINS
        .iter()
        .map(|c| rule(Op::NewChain, c, &[]))
        .collect();

    // Outbound.
    out.push(rule(
        Op::Append,
        OUTPUT_REDIRECT_CHAIN,
        &["-p", "tcp", "-j", "REDIRECT", "--to-port", &outbound],
    ));
    out.push(rule(
        Op::Append,
        "OUTPUT",
        &["-p", "tcp", "-j", OUTPUT_CHAIN],
    ));
    out.push(rule(
        Op::Append,
        OUTPUT_CHAIN,
        &["-m", "owner", "--uid-owner", &proxy_uid, "-j", "RETURN"],
    ));
    out.push(rule(
        Op::Append,
        OUTPUT_CHAIN,
        &["-d", "127.0.0.1/32", "-j", "RETURN"],
    ));
    out.push(rule(
        Op::Append,
        OUTPUT_CHAIN,
        &["-j", OUTPUT_REDIRECT_CHAIN],
    ));
    for port in &config.exclude.outbound_ports {
        let port = port.to_string();
        out.push(rule(
            Op::Insert,
            OUTPUT_CHAIN,
            &["-p", "tcp", "--dport", &port, "-j", "RETURN"],
        ));
    }
    for cidr in config.exclude.outbound_cidrs.iter().filter(|c| c.is_ipv4()) {
        let cidr = cidr.to_string();
        out.push(rule(
            Op::Insert,
            OUTPUT_CHAIN,
            &["-d", &cidr, "-j", "RETURN"],
        ));
    }
    for uid in &config.exclude.uids {
        let uid = uid.to_string();
        out.push(rule(
            Op::Insert,
            OUTPUT_CHAIN,
            &["-m", "owner", "--uid-owner", &uid, "-j", "RETURN"],
        ));
    }

    // Inbound.
    out.push(rule(
        Op::Append,
        INBOUND_REDIRECT_CHAIN,
        &["-p", "tcp", "-j", "REDIRECT", "--to-port", &inbound],
    ));
    out.push(rule(
        Op::Append,
        "PREROUTING",
        &["-p", "tcp", "-j", INBOUND_CHAIN],
    ));
    out.push(rule(
        Op::Append,
        INBOUND_CHAIN,
        &["-p", "tcp", "-j", INBOUND_REDIRECT_CHAIN],
    ));
    for port in &config.exclude.inbound_ports {
        let port = port.to_string();
        out.push(rule(
            Op::Insert,
            INBOUND_CHAIN,
            &["-p", "tcp", "--dport", &port, "-j", "RETURN"],
        ));
    }
    out
}

/// What [`super::remove`] runs when the jumps are the untagged ones [`rules`] installs: delete
/// the two jumps, flush the own chains, delete them (for `-remove -dry-run`).
pub fn remove_plan() -> Vec<Rule> {
    let mut out = vec![
        Rule::new(Op::Delete, "OUTPUT", &["-p", "tcp", "-j", OUTPUT_CHAIN]),
        Rule::new(
            Op::Delete,
            "PREROUTING",
            &["-p", "tcp", "-j", INBOUND_CHAIN],
        ),
    ];
    out.extend(OWN_CHAINS.iter().map(|c| Rule::new(Op::Flush, c, &[])));
    out.extend(
        OWN_CHAINS
            .iter()
            .map(|c| Rule::new(Op::DeleteChain, c, &[])),
    );
    out
}

/// One shell line per rule, each ending in a newline.
pub fn render(rules: &[Rule]) -> String {
    rules.iter().map(|r| format!("{r}\n")).collect()
}
