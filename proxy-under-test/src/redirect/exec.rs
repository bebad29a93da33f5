//! Running iptables: [`Iptables`] (which binary, injected), idempotent [`apply`] and
//! [`remove`], and the mapping of iptables' failures to [`RedirectError`]s.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::RedirectError;
use super::config::RedirectConfig;
use super::rules::{OWN_CHAINS, Op, Rule, TABLE, rules};

/// Where iptables is looked for after `PATH`.
const FALLBACK_DIRS: [&str; 2] = ["/usr/sbin", "/sbin"];

/// How to run iptables: the binary's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Iptables {
    program: PathBuf,
}

impl Iptables {
    /// Runs `program` (a path; not looked up).
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
        }
    }

    /// Finds an executable `iptables` in the directories of `path_var` (a `PATH` value, passed
    /// in by the caller), then in /usr/sbin and /sbin.
    pub fn find(path_var: Option<&OsStr>) -> Result<Self, RedirectError> {
        let mut tried = Vec::new();
        let dirs = path_var
            .map(|p| std::env::split_paths(p).collect::<Vec<_>>())
            .unwrap_or_default();
        for dir in dirs
            .into_iter()
            .chain(FALLBACK_DIRS.iter().map(PathBuf::from))
        {
            if dir.as_os_str().is_empty() {
                continue;
            }
            let candidate = dir.join("iptables");
            if tried.contains(&candidate) {
                continue;
            }
            if is_executable(&candidate) {
                return Ok(Self::new(candidate));
            }
            tried.push(candidate);
        }
        Err(RedirectError::NotInstalled { tried })
    }

    /// The binary.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// Runs iptables with `args` (`-w` prepended: wait for the xtables lock).
    fn output(&self, args: &[String]) -> Result<(String, Output), RedirectError> {
        let command = format!("{} {}", self.program.display(), args.join(" "));
        let spawned = Command::new(&self.program)
            .arg("-w")
            .args(args)
            .stdin(Stdio::null())
            .output();
        match spawned {
            Ok(out) => Ok((command, out)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(RedirectError::NotInstalled {
                    tried: vec![self.program.clone()],
                })
            }
            Err(e) => Err(RedirectError::Failed {
                command,
                status: None,
                stderr: format!("cannot run it: {e}"),
            }),
        }
    }

    /// Runs iptables with `args`; any failure is an error. Returns stdout.
    fn run(&self, args: &[String]) -> Result<String, RedirectError> {
        let (command, out) = self.output(args)?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(failure(command, &out))
        }
    }

    /// `iptables -C`: whether the rule exists (exit status 1 = it does not).
    fn exists(&self, rule: &Rule) -> Result<bool, RedirectError> {
        let mut check = rule.argv();
        check[2] = "-C".to_owned();
        let (command, out) = self.output(&check)?;
        match out.status.code() {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(failure(command, &out)),
        }
    }

    /// `iptables -t nat -S`, one line per chain or rule.
    fn list(&self) -> Result<Vec<String>, RedirectError> {
        let out = self.run(&["-t".to_owned(), TABLE.to_owned(), "-S".to_owned()])?;
        Ok(out.lines().map(str::to_owned).collect())
    }
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Maps a failed run: exit status 4 or iptables' permission messages are
/// [`RedirectError::NotPermitted`], anything else [`RedirectError::Failed`].
fn failure(command: String, out: &Output) -> RedirectError {
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    let status = out.status.code();
    if status == Some(4)
        || stderr.contains("Permission denied (you must be root)")
        || stderr.contains("can't initialize iptables table")
    {
        RedirectError::NotPermitted { command, stderr }
    } else {
        RedirectError::Failed {
            command,
            status,
            stderr,
        }
    }
}

/// What [`apply`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    /// Chains that did not exist and were created.
    pub chains_created: usize,
    /// Chains that existed and were flushed before being refilled.
    pub chains_flushed: usize,
    /// `OUTPUT`/`PREROUTING` jumps added.
    pub jumps_added: usize,
    /// `OUTPUT`/`PREROUTING` jumps already present (left alone).
    pub jumps_kept: usize,
    /// Rules added to the own chains.
    pub rules_added: usize,
}

/// What [`remove`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Removed {
    /// Jumps into the own chains deleted from other chains.
    pub jumps_deleted: usize,
    /// Own chains deleted.
    pub chains_deleted: usize,
}

/// Installs [`rules`]`(config)` idempotently: each own chain is created when missing or flushed
/// when present, then refilled; the `OUTPUT`/`PREROUTING` jumps are added only when `iptables
/// -C` says they are absent. Not atomic: a failure can leave part of the rules installed (as
/// Consul's).
pub fn apply(config: &RedirectConfig, iptables: &Iptables) -> Result<Applied, RedirectError> {
    config.validate()?;
    let existing = chains(&iptables.list()?);
    let mut done = Applied::default();
    for rule in rules(config) {
        if rule.op == Op::NewChain && existing.contains(&rule.chain) {
            let flush = Rule {
                op: Op::Flush,
                ..rule
            };
            iptables.run(&flush.argv())?;
            done.chains_flushed += 1;
        } else if rule.op == Op::NewChain {
            iptables.run(&rule.argv())?;
            done.chains_created += 1;
        } else if rule.is_builtin_jump() {
            if iptables.exists(&rule)? {
                done.jumps_kept += 1;
            } else {
                iptables.run(&rule.argv())?;
                done.jumps_added += 1;
            }
        } else {
            iptables.run(&rule.argv())?;
            done.rules_added += 1;
        }
    }
    Ok(done)
}

/// Deletes every jump into the own chains (from any other chain), then flushes and deletes the
/// own chains that exist. Nothing installed is not an error.
pub fn remove(iptables: &Iptables) -> Result<Removed, RedirectError> {
    let lines = iptables.list()?;
    let mut done = Removed::default();
    for line in &lines {
        let tokens = split_spec(line);
        let [flag, chain, rest @ ..] = tokens.as_slice() else {
            continue;
        };
        if flag != "-A" || OWN_CHAINS.contains(&chain.as_str()) || !jumps_to_own_chain(rest) {
            continue;
        }
        // By specification, not number: right even if the chain changes meanwhile.
        let rule = Rule {
            table: TABLE,
            op: Op::Delete,
            chain: chain.clone(),
            args: rest.to_vec(),
        };
        iptables.run(&rule.argv())?;
        done.jumps_deleted += 1;
    }
    let existing = chains(&lines);
    let own: Vec<&str> = OWN_CHAINS
        .iter()
        .copied()
        .filter(|c| existing.contains(*c))
        .collect();
    for op in [Op::Flush, Op::DeleteChain] {
        for chain in &own {
            let rule = Rule {
                table: TABLE,
                op,
                chain: (*chain).to_owned(),
                args: Vec::new(),
            };
            iptables.run(&rule.argv())?;
        }
    }
    done.chains_deleted = own.len();
    Ok(done)
}

/// The user-defined chains of an `iptables -S` listing (`-N NAME` lines).
fn chains(lines: &[String]) -> BTreeSet<String> {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix("-N "))
        .map(|c| c.trim().to_owned())
        .collect()
}

/// Whether a rule spec's target (`-j` or `-g`) is one of the own chains.
fn jumps_to_own_chain(spec: &[String]) -> bool {
    spec.windows(2)
        .any(|w| (w[0] == "-j" || w[0] == "-g") && OWN_CHAINS.contains(&w[1].as_str()))
}

/// Splits an `iptables -S` line into arguments: whitespace-separated, `"..."` quoted with `\`
/// escapes (how iptables prints a comment with spaces).
pub(super) fn split_spec(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_token = false;
    let mut quoted = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                in_token = true;
            }
            '\\' if quoted => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            c if c.is_whitespace() && !quoted => {
                if in_token {
                    out.push(std::mem::take(&mut cur));
                    in_token = false;
                }
            }
            c => {
                cur.push(c);
                in_token = true;
            }
        }
    }
    if in_token {
        out.push(cur);
    }
    out
}
