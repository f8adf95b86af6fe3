//! `tessera mail …`: proving the SMTP set-up before anything depends on it.

use clap::Subcommand;
use lettre::message::Mailbox;

use crate::config::Settings;

#[derive(Subcommand)]
pub enum MailCommand {
    /// Send a test message to ADDRESS through --smtp-url and print the server's answer
    Test {
        /// Where to send it
        address: String,
    },
}

pub fn mail(settings: &Settings, cmd: MailCommand) -> Result<(), String> {
    let smtp = settings
        .smtp
        .as_ref()
        .ok_or("mail is off: set --smtp-url and --smtp-from (or TESSERA_SMTP_URL and TESSERA_SMTP_FROM)")?;
    match cmd {
        MailCommand::Test { address } => {
            let to: Mailbox = address
                .parse()
                .map_err(|e| format!("`{address}` is not an email address: {e}"))?;
            let from = settings
                .issuer
                .as_ref()
                .map(|i| format!(" at {}", i.as_str()))
                .unwrap_or_default();
            let text = format!(
                "This is a test message from Tessera{from}.\n\nIf you can read it, Tessera can send mail through {}.\n",
                smtp.label()
            );
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start: {e}"))?;
            let answer = runtime
                .block_on(smtp.send(&to, "Tessera test message", text))
                .map_err(|e| format!("cannot send mail: {e}"))?;
            println!(
                "sent to {} through {}: the server answered {answer}",
                to.email,
                smtp.label()
            );
            Ok(())
        }
    }
}
