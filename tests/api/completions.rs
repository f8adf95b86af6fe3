//! `tessera completions SHELL` and `tessera man`, run from the built binary: the scripts
//! parse in their shells, the page renders in groff, and neither needs settings.

use std::path::Path;
use std::process::{Command, Output};

/// Subcommands every generated artefact must know, top-level and nested.
const NAMES: [&str; 4] = ["serve", "client", "resource", "registration-token"];

/// Run `tessera ARGS` in `dir` with settings that would make any settings load fail:
/// a missing config file and an invalid bcrypt cost.
fn tessera_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(args)
        .current_dir(dir)
        .env("TESSERA_CONFIG", dir.join("missing.toml"))
        .env("TESSERA_BCRYPT_COST", "banana")
        .env_remove("TESSERA_DB")
        .env_remove("TESSERA_DATABASE_URL")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Whether `program` runs here (see `helpers::available`).
fn installed(program: &str, args: &[&str]) -> bool {
    crate::helpers::available(Command::new(program).args(args), program)
}

/// The script for `shell`, written to a file, after checking it names the subcommands.
fn script(dir: &tempfile::TempDir, shell: &str) -> std::path::PathBuf {
    let out = tessera_in(dir.path(), &["completions", shell]);
    assert!(out.status.success(), "{shell}: {}", text(&out.stderr));
    let body = text(&out.stdout);
    for name in NAMES {
        assert!(body.contains(name), "{shell} completions miss {name}");
    }
    let file = dir.path().join(format!("tessera.{shell}"));
    std::fs::write(&file, body).unwrap();
    file
}

fn assert_runs(program: &str, args: &[&str], file: &Path) -> String {
    let out = Command::new(program).args(args).arg(file).output().unwrap();
    assert!(out.status.success(), "{program} {args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn bash_completions_parse_and_register_for_tessera() {
    let dir = tempfile::tempdir().unwrap();
    let file = script(&dir, "bash");
    assert_runs("bash", &["-n"], &file);
    // Sourced, the script registers a completion function for the command.
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("source '{}' && complete -p tessera", file.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("-F _tessera"), "{}", text(&out.stdout));
}

#[test]
fn zsh_completions_parse() {
    let dir = tempfile::tempdir().unwrap();
    let file = script(&dir, "zsh");
    assert!(std::fs::read_to_string(&file).unwrap().starts_with("#compdef tessera"));
    if installed("zsh", &["-c", "true"]) {
        assert_runs("zsh", &["-n"], &file);
    }
}

#[test]
fn fish_completions_parse() {
    let dir = tempfile::tempdir().unwrap();
    let file = script(&dir, "fish");
    assert!(std::fs::read_to_string(&file).unwrap().contains("complete -c tessera"));
    if installed("fish", &["-c", "true"]) {
        assert_runs("fish", &["--no-execute"], &file);
    }
}

#[test]
fn elvish_and_powershell_completions_are_generated() {
    let dir = tempfile::tempdir().unwrap();
    script(&dir, "elvish");
    script(&dir, "powershell");
}

#[test]
fn an_unknown_shell_is_refused_with_the_choices() {
    let dir = tempfile::tempdir().unwrap();
    let out = tessera_in(dir.path(), &["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "clap's usage error");
    assert!(out.stdout.is_empty());
    let err = text(&out.stderr);
    assert!(err.contains("invalid value 'tcsh'"), "{err}");
    assert!(
        err.contains("bash") && err.contains("zsh") && err.contains("fish"),
        "{err}"
    );
}

#[test]
fn man_page_has_the_sections_and_every_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let out = tessera_in(dir.path(), &["man"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page = text(&out.stdout);
    assert!(page.starts_with(".TH tessera 1"), "{}", &page[..page.len().min(200)]);
    for heading in [
        ".SH NAME",
        ".SH SYNOPSIS",
        ".SH DESCRIPTION",
        ".SH OPTIONS",
        ".SH COMMANDS",
    ] {
        assert!(page.contains(heading), "missing {heading}");
    }
    // Section names are request arguments, which roff takes unescaped.
    for section in [
        "tessera serve",
        "tessera client add",
        "tessera client registration-token",
    ] {
        assert!(page.contains(&format!(".SS \"{section}\"")), "no section for {section}");
    }
    // A serve option, a nested subcommand's option, and a global one with its variable.
    assert!(page.contains("\\-\\-listen"));
    assert!(page.contains("\\-\\-redirect\\-uri"));
    assert!(page.contains("TESSERA_DATABASE_URL"));

    let file = dir.path().join("tessera.1");
    std::fs::write(&file, &page).unwrap();
    if installed("groff", &["--version"]) {
        // -ww: every warning; -k: through preconv, as man runs it, for the non-ASCII
        // characters in the help text (… §).
        let out = Command::new("groff")
            .args(["-k", "-man", "-Tutf8", "-ww"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(out.status.success());
        assert!(out.stderr.is_empty(), "groff warns: {}", text(&out.stderr));
        // Overstrike bold/underline (X\bX) removed, as `col -b` does.
        let shown = strip_overstrike(&text(&out.stdout)).replace(['\u{2010}', '\u{2212}'], "-");
        assert!(shown.contains("NAME"));
        for name in [
            "tessera client registration-token",
            "tessera resource add",
            "--redirect-uri",
        ] {
            assert!(shown.contains(name), "rendered page misses {name}");
        }
    }
}

#[test]
fn neither_command_loads_settings_or_touches_a_database() {
    let dir = tempfile::tempdir().unwrap();
    // The control: a command that does load settings fails with this environment.
    let check = tessera_in(dir.path(), &["check"]);
    assert!(!check.status.success(), "the environment should break settings");
    for args in [&["completions", "bash"][..], &["man"][..]] {
        let out = tessera_in(dir.path(), args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        assert!(out.stderr.is_empty(), "{args:?}: {}", text(&out.stderr));
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "files appeared: {left:?}");
}

fn strip_overstrike(s: &str) -> String {
    let mut out: Vec<char> = Vec::new();
    for c in s.chars() {
        if c == '\u{8}' {
            out.pop();
        } else {
            out.push(c);
        }
    }
    // Bold is X\bX and underline _\bX: the backspace drops the character before it.
    out.into_iter().collect()
}
