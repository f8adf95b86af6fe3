//! `tessera client claim …`: a client's claim mapping (docs/PROTOCOL.md "Claim mapping").

use clap::Subcommand;

use super::{actor, admin_err, with_state};
use crate::admin::{
    self,
    claims::{GroupValue, RuleSpec},
    AdminError,
};
use crate::config::Settings;

#[derive(Subcommand)]
pub enum ClaimCommand {
    /// List a client's claim rules
    List {
        client_id: String,
        #[arg(long)]
        json: bool,
    },
    /// Add a rule, or replace the rule for the same claim
    Set {
        client_id: String,
        /// The claim's name in the tokens (`roles`, `groups`, …)
        claim: String,
        /// groups, preferred_username, email, email_verified, name, sub, group_values, or a claim stored on users
        #[arg(long = "from", value_name = "SOURCE")]
        source: String,
        /// Released only when this scope is granted (a standard or a custom one) [default: always]
        #[arg(long, value_name = "SCOPE")]
        scope: Option<String>,
        /// Where the claim goes, comma-separated: id_token, access_token, userinfo [default: id_token,userinfo]
        #[arg(long = "in", value_name = "TARGETS", value_delimiter = ',')]
        targets: Vec<String>,
        /// group_values: GROUP=VALUE, tried in order; repeat for several
        #[arg(long = "value", value_name = "GROUP=VALUE")]
        values: Vec<String>,
        /// group_values: the value when no group matches [default: the claim is left out]
        #[arg(long, value_name = "VALUE")]
        default: Option<String>,
    },
    /// Delete the rule for one claim
    Delete { client_id: String, claim: String },
}

/// `GROUP=VALUE` pairs; the group is what precedes the first `=`.
fn pairs(values: &[String]) -> Result<Vec<GroupValue>, String> {
    values
        .iter()
        .map(|v| match v.split_once('=') {
            Some((g, val)) if !g.trim().is_empty() && !val.is_empty() => Ok(GroupValue {
                group: g.trim().to_string(),
                value: val.to_string(),
            }),
            _ => Err(format!("--value {v}: expected GROUP=VALUE")),
        })
        .collect()
}

fn refused(e: AdminError, client_id: &str) -> String {
    match e {
        AdminError::NotFound("client") => format!("no client with id {client_id}"),
        other => admin_err(other, "such claim rule"),
    }
}

fn print_table(rules: &[crate::db::claim_rules::ClaimRule]) {
    println!("{:<24} {:<20} {:<16} {:<34} VALUES", "CLAIM", "FROM", "SCOPE", "IN");
    for r in rules {
        let spec = RuleSpec::of(r);
        let mut values: Vec<String> = spec.values.iter().map(|v| format!("{}={}", v.group, v.value)).collect();
        values.extend(spec.default.as_ref().map(|d| format!("default={d}")));
        println!(
            "{:<24} {:<20} {:<16} {:<34} {}",
            spec.claim,
            spec.source,
            spec.scope.as_deref().unwrap_or("(any)"),
            spec.targets.join(","),
            values.join(" ")
        );
    }
}

pub fn claim(settings: &Settings, cmd: ClaimCommand) -> Result<(), String> {
    match cmd {
        ClaimCommand::List { client_id, json } => with_state(settings, async |state| {
            let rules = admin::claims::list(&state.ctx(), &client_id)
                .await
                .map_err(|e| refused(e, &client_id))?;
            if json {
                println!("{}", admin::claims::listed(&rules));
            } else {
                print_table(&rules);
            }
            Ok(())
        }),
        ClaimCommand::Set {
            client_id,
            claim,
            source,
            scope,
            targets,
            values,
            default,
        } => {
            let spec = RuleSpec {
                claim,
                source,
                scope,
                targets,
                values: pairs(&values)?,
                default,
            };
            with_state(settings, async |state| {
                admin::claims::put(&state.ctx(), &state.clients, &actor(), &client_id, &spec)
                    .await
                    .map_err(|e| refused(e, &client_id))?;
                println!("claim {} of client {client_id} set", spec.claim.trim());
                Ok(())
            })
        }
        ClaimCommand::Delete { client_id, claim } => with_state(settings, async |state| {
            admin::claims::delete(&state.ctx(), &state.clients, &actor(), &client_id, &claim)
                .await
                .map_err(|e| match e {
                    AdminError::NotFound("claim rule") => format!("client {client_id} maps no claim {claim}"),
                    other => refused(other, &client_id),
                })?;
            println!("claim {claim} of client {client_id} deleted");
            Ok(())
        }),
    }
}
