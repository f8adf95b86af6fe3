//! `tessera completions SHELL` and `tessera man`: shell completion scripts and the manual
//! page, generated from the command line's own clap definition so they cannot drift from
//! it. Neither reads settings nor opens the database.

use std::io::Write;

use clap::{Arg, Command};
pub use clap_complete::Shell;
use clap_mangen::roff::{bold, italic, roman, Inline, Roff};
use clap_mangen::Man;

/// Print the completion script for `shell` to standard output.
pub fn completions(cmd: Command, shell: Shell) -> Result<(), String> {
    write_stdout(&completion_script(cmd, shell))
}

/// Print the manual page, tessera(1), as roff to standard output.
pub fn man(cmd: Command) -> Result<(), String> {
    write_stdout(&man_page(cmd)?)
}

/// The completion script as bytes. Generated into memory first because clap_complete
/// panics when its writer fails (a closed pipe, say); a `Vec` never does.
pub fn completion_script(mut cmd: Command, shell: Shell) -> Vec<u8> {
    let name = cmd.get_name().to_owned();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, name, &mut script);
    script
}

/// One page for the whole command: clap_mangen's header, synopsis, description and the
/// global options, then a COMMANDS section with every subcommand (at any depth) and its
/// own options. clap_mangen alone would list the subcommands as references to pages
/// `tessera-user(1)` … that a single page does not ship.
pub fn man_page(cmd: Command) -> Result<Vec<u8>, String> {
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let man = Man::new(cmd.clone());
    let mut commands = Roff::default();
    commands.control("SH", ["COMMANDS"]);
    for sub in visible_subcommands(&cmd) {
        command_section(&mut commands, sub);
    }
    let err = |e: std::io::Error| format!("cannot render the manual page: {e}");
    let mut rendered = Vec::new();
    man.render_title(&mut rendered).map_err(err)?;
    man.render_name_section(&mut rendered).map_err(err)?;
    man.render_synopsis_section(&mut rendered).map_err(err)?;
    man.render_description_section(&mut rendered).map_err(err)?;
    man.render_options_section(&mut rendered).map_err(err)?;
    commands.to_writer(&mut rendered).map_err(err)?;
    if cmd.get_version().is_some() {
        man.render_version_section(&mut rendered).map_err(err)?;
    }
    let rendered = String::from_utf8(rendered).map_err(|_| "the manual page is not UTF-8".to_owned())?;
    Ok(one_preamble(&rendered).into_bytes())
}

/// The roff crate starts every rendering with two requests defining the apostrophe
/// string `Aq`; the sections rendered one by one would repeat them. Keep one copy, after
/// `.TH`, so the page opens with its title as man pages do.
fn one_preamble(rendered: &str) -> String {
    const PREAMBLE: [&str; 2] = [r".ie \n(.g .ds Aq \(aq", ".el .ds Aq '"];
    let mut lines = rendered.lines().filter(|l| !PREAMBLE.contains(l));
    let title = lines.next();
    let mut page = String::with_capacity(rendered.len());
    for line in title.into_iter().chain(PREAMBLE).chain(lines) {
        page.push_str(line);
        page.push('\n');
    }
    page
}

fn visible_subcommands(cmd: &Command) -> impl Iterator<Item = &Command> {
    cmd.get_subcommands().filter(|s| !s.is_hide_set())
}

/// `.SS "tessera client add"`: what it does, how it is called, its own options; then its
/// subcommands, each in a section of its own (roff has no level below `.SS`).
fn command_section(roff: &mut Roff, cmd: &Command) {
    let path = cmd.get_bin_name().unwrap_or_else(|| cmd.get_name()).to_owned();
    roff.control("SS", [path.as_str()]);
    if let Some(about) = cmd.get_long_about().or_else(|| cmd.get_about()) {
        paragraphs(roff, &about.to_string());
    }
    // Usage text is clap's own (the same as `--help` prints), without its styling.
    let usage = cmd.clone().render_usage().to_string();
    for (i, line) in usage.lines().enumerate() {
        let line = line.trim().trim_start_matches("Usage:").trim();
        if line.is_empty() {
            continue;
        }
        roff.control(if i == 0 { "PP" } else { "br" }, []);
        roff.text([bold(line.to_owned())]);
    }
    // Global options are described once, in OPTIONS; -h/-V are clap's own.
    let args = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !a.is_global_set())
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"));
    for arg in args {
        argument(roff, arg);
    }
    for sub in visible_subcommands(cmd) {
        command_section(roff, sub);
    }
}

/// One `.TP` entry: `-s, --long VALUE` or `VALUE`, then the help, the possible values and
/// the environment variable.
fn argument(roff: &mut Roff, arg: &Arg) {
    let mut head: Vec<Inline> = Vec::new();
    if let Some(short) = arg.get_short() {
        head.push(bold(format!("-{short}")));
    }
    if let Some(long) = arg.get_long() {
        if !head.is_empty() {
            head.push(roman(", "));
        }
        head.push(bold(format!("--{long}")));
    }
    let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values());
    if takes_value || arg.is_positional() {
        let value = match arg.get_value_names() {
            Some(names) => names.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(" "),
            None => arg.get_id().as_str().to_uppercase(),
        };
        if !head.is_empty() {
            head.push(roman(" "));
        }
        head.push(italic(value));
    }
    roff.control("TP", []);
    roff.text(head);
    if let Some(help) = arg.get_long_help().or_else(|| arg.get_help()) {
        paragraphs(roff, &help.to_string());
    }
    let values: Vec<_> = arg
        .get_possible_values()
        .into_iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| v.get_name().to_owned())
        .collect();
    if !values.is_empty() && takes_value {
        roff.text([
            Inline::LineBreak,
            roman(format!("[possible values: {}]", values.join(", "))),
        ]);
    }
    if let Some(env) = arg.get_env().filter(|_| !arg.is_hide_env_set()) {
        roff.text([
            Inline::LineBreak,
            roman("[env: "),
            bold(env.to_string_lossy().into_owned()),
            roman("]"),
        ]);
    }
}

/// Text lines as roff text, a blank line as a paragraph break; the roff crate escapes
/// each line, so help text cannot turn into a request.
fn paragraphs(roff: &mut Roff, text: &str) {
    for line in text.lines() {
        if line.trim().is_empty() {
            roff.control("PP", []);
        } else {
            roff.text([roman(line.to_owned())]);
        }
    }
}

/// A reader that closed the pipe early (`tessera man | head`) has what it wanted: that
/// ends the command quietly, as SIGPIPE ends other tools.
fn write_stdout(bytes: &[u8]) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("cannot write to standard output: {e}")),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ArgAction;

    fn sample() -> Command {
        Command::new("demo")
            .version("1.0")
            .about("A demo")
            .arg(
                Arg::new("db")
                    .long("db")
                    .global(true)
                    .value_name("PATH")
                    .help("The database"),
            )
            .subcommand(
                Command::new("client").about("Manage clients").subcommand(
                    Command::new("add")
                        .about("Add a client")
                        .arg(Arg::new("id").value_name("CLIENT_ID").required(true).help("Its id"))
                        .arg(
                            Arg::new("public")
                                .long("public")
                                .action(ArgAction::SetTrue)
                                .help(".TH an injected request"),
                        ),
                ),
            )
    }

    fn page() -> String {
        String::from_utf8(man_page(sample()).unwrap()).unwrap()
    }

    #[test]
    fn man_page_has_a_section_per_subcommand_at_any_depth() {
        let page = page();
        assert!(page.starts_with(".TH"), "{page}");
        // The apostrophe string is defined once (its .ie and .el halves), after .TH.
        assert_eq!(page.matches(".ds Aq").count(), 2, "{page}");
        assert!(page.lines().nth(1).is_some_and(|l| l.starts_with(".ie")), "{page}");
        assert!(page.contains(".SH COMMANDS"), "{page}");
        assert!(page.contains(".SS \"demo client\""), "{page}");
        assert!(page.contains(".SS \"demo client add\""), "{page}");
        assert!(page.contains("CLIENT_ID"), "{page}");
        assert!(page.contains("\\-\\-public"), "{page}");
    }

    #[test]
    fn global_options_are_described_once() {
        let page = page();
        assert_eq!(page.matches("The database").count(), 1, "{page}");
    }

    #[test]
    fn help_text_is_escaped_not_a_request() {
        let page = page();
        assert!(!page.lines().any(|l| l.starts_with(".TH an")), "{page}");
        assert!(page.contains("an injected request"), "{page}");
    }

    #[test]
    fn completion_scripts_name_the_subcommands() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish, Shell::Elvish, Shell::PowerShell] {
            let script = String::from_utf8(completion_script(sample(), shell)).unwrap();
            assert!(script.contains("client"), "{shell}: {script}");
            assert!(script.contains("public"), "{shell}: {script}");
        }
    }
}
