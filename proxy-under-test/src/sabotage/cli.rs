//! The `--sabotage NAME` flag (repeatable, or comma-separated), added to the command line only in
//! this build, and the sabotages applied to the command line itself (`ignore-token-file`,
//! `skip-agent-tls-verify`).

use super::{Sabotage, Sabotages};
use crate::agent::AgentTls;
use crate::cli::Invocation;

impl Sabotages {
    /// `command` with the `--sabotage NAME` argument.
    pub(crate) fn args(command: clap::Command) -> clap::Command {
        command.arg(
            clap::Arg::new("sabotage")
                .long("sabotage")
                .value_name("NAME")
                .action(clap::ArgAction::Append)
                .value_delimiter(',')
                .value_parser(clap::builder::EnumValueParser::<Sabotage>::new())
                .help("Test only: run with a deliberately broken behaviour (repeatable)"),
        )
    }

    /// The set chosen on the command line.
    pub(crate) fn from_matches(matches: &clap::ArgMatches) -> Self {
        matches
            .get_many::<Sabotage>("sabotage")
            .into_iter()
            .flatten()
            .copied()
            .collect()
    }

    /// Applies the CLI-level sabotage (`ignore-token-file`) and warns that the run is broken.
    pub(crate) fn adjust(mut invocation: Invocation) -> Invocation {
        if !invocation.hooks.is_empty() {
            tracing::warn!(sabotage = %invocation.hooks, "TEST ONLY: deliberately broken behaviours enabled");
        }
        if invocation.hooks.contains(Sabotage::IgnoreTokenFile) {
            invocation.cli.token_file = None;
        }
        invocation
    }

    /// `skip-agent-tls-verify`: the agent's certificate is never verified, as with
    /// `CONSUL_HTTP_SSL_VERIFY=false` (an impostor agent is believed).
    pub(crate) fn agent_tls(self, mut tls: AgentTls) -> AgentTls {
        if self.contains(Sabotage::SkipAgentTlsVerify) {
            tls.skip_verify = true;
        }
        tls
    }
}
