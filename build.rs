//! Names the commit a binary was built from, for `tessera --version`, compiles the
//! message catalogues of `locales/` into tables (`src/i18n/generate.rs`), and on
//! x86_64 Linux gives the link two layout options that keep an idle server's memory
//! small: packed relative relocations, and the hot functions first.
//!
//! `TESSERA_COMMIT` (read with `env!`) is, in this order: `TESSERA_BUILD_COMMIT` from the
//! environment (a container build has no `.git`: `--build-arg TESSERA_BUILD_COMMIT=…`),
//! the short commit of the git checkout with `-dirty` when what is compiled differs
//! from it, or `unknown`. Nothing here fails the build: a missing git, a tarball or a
//! broken repository all give `unknown`.

use std::path::Path;
use std::process::Command;

#[path = "src/i18n/generate.rs"]
mod generate;

/// What goes into the binary; a change elsewhere (docs, tests) does not make it dirty.
/// tests/api/packaging.rs asks git the same question with the same list.
const BUILT_FROM: &[&str] = &[
    "src",
    "templates",
    "static",
    "locales",
    "Cargo.toml",
    "Cargo.lock",
    "build.rs",
    "link",
    "tessera-bcrypt",
];

fn main() {
    println!("cargo:rerun-if-env-changed=TESSERA_BUILD_COMMIT");
    let commit = match std::env::var("TESSERA_BUILD_COMMIT") {
        Ok(given) if !given.trim().is_empty() => sanitize(&given),
        _ => from_git().unwrap_or_else(|| "unknown".to_string()),
    };
    println!("cargo:rustc-env=TESSERA_COMMIT={commit}");
    pack_relative_relocations();
    hot_functions_first();
    catalogues();
}

/// The position-independent executable carries about 40,000 relative relocations; as
/// RELA entries (24 bytes each) they are almost 1 MB that the loader reads at every
/// start and that then stays resident. DT_RELR packs them into a bitmap of a few KB
/// (binutils 2.38 and glibc 2.36, both in Debian 12, the release the container builds
/// on and runs). The executable stays position-independent, so ASLR is unchanged.
fn pack_relative_relocations() {
    if env("CARGO_CFG_TARGET_OS") == "linux" && env("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// The functions a server runs at start-up and per request are about 3.4 MB of the
/// executable's 17.8 MB of code, spread across all of it; the kernel maps a file page
/// (or a whole large folio of them) into the process when any byte of it runs, so a
/// server that has only started ends up with about 11 MB of code resident.
/// `link/hot-functions.txt` (written by `scripts/hot-functions.py` from a profile of a
/// start, 3 s idle and each kind of request) lists those functions, and lld places
/// them first and in that order, so they share pages: 3.6 MB of code resident instead.
///
/// Only where the linker takes the option: lld does (rustc's own linker on x86_64 Linux
/// since Rust 1.90), GNU ld (a distribution's rustc, an older one) refuses it, so a
/// one-line program is linked with it first. A name the list has that this build does
/// not (another compiler or dependency version changes symbol hashes) is skipped
/// silently: the binary is correct either way, only less compact, and the script says
/// how much of its list the build it profiled still has. `TESSERA_HOT_TEXT=off` links
/// in the compiler's order, which the script profiles so that the list keeps that
/// order (the functions of one module next to each other, as they call each other)
/// rather than the order of a previous list.
fn hot_functions_first() {
    println!("cargo:rerun-if-env-changed=TESSERA_HOT_TEXT");
    let list = Path::new(&env("CARGO_MANIFEST_DIR")).join("link/hot-functions.txt");
    if !list.is_file() {
        return;
    }
    println!("cargo:rerun-if-changed=link/hot-functions.txt");
    // The names are those of this target's release build.
    if env("PROFILE") != "release" || env("TESSERA_HOT_TEXT") == "off" || env("TARGET") != "x86_64-unknown-linux-gnu" {
        return;
    }
    // `-Xlinker` pairs rather than `-Wl,…`, which would split a path at its commas.
    let order = format!("--symbol-ordering-file={}", list.display());
    let args = ["-Xlinker", order.as_str(), "-Xlinker", "--no-warn-symbol-ordering"];
    if links_with(&args) {
        for arg in args {
            println!("cargo:rustc-link-arg-bins={arg}");
        }
    } else {
        println!(
            "cargo:warning=the linker does not take --symbol-ordering-file (lld's): the executable keeps \
             the compiler's function order, and an idle server about 7 MB more of its code resident"
        );
    }
}

/// Whether the compiler Cargo runs links a program for this target, with this build's
/// flags and linker, when given `args` as link arguments.
fn links_with(args: &[&str]) -> bool {
    let dir = Path::new(&env("OUT_DIR")).join("link-probe");
    if std::fs::create_dir_all(&dir).is_err() || std::fs::write(dir.join("main.rs"), "fn main() {}\n").is_err() {
        return false;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let mut probe = Command::new(rustc);
    probe
        .args(["--edition", "2021", "--crate-type", "bin", "--target"])
        .arg(env("TARGET"))
        .arg("-o")
        .arg(dir.join("main"))
        .arg(dir.join("main.rs"));
    probe.args(
        env("CARGO_ENCODED_RUSTFLAGS")
            .split('\x1f')
            .filter(|flag| !flag.is_empty()),
    );
    if let Ok(linker) = std::env::var("RUSTC_LINKER") {
        probe.arg(format!("-Clinker={linker}"));
    }
    probe.args(args.iter().map(|arg| format!("-Clink-arg={arg}")));
    let linked = probe
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    let _ = std::fs::remove_dir_all(&dir);
    linked
}

/// A variable Cargo gives build scripts, or "" when it is not set.
fn env(key: &str) -> String {
    std::env::var(key).unwrap_or_default()
}

/// The catalogues become `$OUT_DIR/messages.rs`, included by `src/i18n/mod.rs`; an
/// unreadable line stops the build with its place.
fn catalogues() {
    if let Err(e) = write_catalogues() {
        eprintln!("error: message catalogue: {e}");
        std::process::exit(1);
    }
}

fn write_catalogues() -> Result<(), String> {
    println!("cargo:rerun-if-changed=locales");
    println!("cargo:rerun-if-changed=src/i18n/generate.rs");
    let (Some(manifest), Some(out)) = (std::env::var_os("CARGO_MANIFEST_DIR"), std::env::var_os("OUT_DIR")) else {
        return Err("cargo sets CARGO_MANIFEST_DIR and OUT_DIR for build scripts".into());
    };
    let locales = Path::new(&manifest).join("locales");
    for (tag, _) in generate::LOCALES {
        println!("cargo:rerun-if-changed=locales/{tag}");
    }
    let source = generate::generate(&locales)?;
    std::fs::write(Path::new(&out).join("messages.rs"), source).map_err(|e| format!("writing the message tables: {e}"))
}

/// A commit given from outside ends up in `--version` output: keep it to the
/// characters a commit name has, and short.
fn sanitize(given: &str) -> String {
    let kept: String = given
        .trim()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        .take(64)
        .collect();
    if kept.is_empty() {
        "unknown".to_string()
    } else {
        kept
    }
}

fn from_git() -> Option<String> {
    // Only a checkout of Tessera itself: a copy inside some other repository (vendored
    // sources) would otherwise be named by that repository's commit.
    if !git_raw(&["rev-parse", "--show-prefix"])?.trim().is_empty() {
        return None;
    }
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    // Rebuild when HEAD moves (checkout, commit: the branch's ref or packed-refs), when
    // the index changes (add, commit) and when anything compiled changes (dirty).
    for name in ["HEAD", "packed-refs", "index"] {
        watch_git_path(name);
    }
    if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch_git_path(&reference);
    }
    // A path that is missing would count as changed at every build.
    for path in BUILT_FROM.iter().filter(|path| Path::new(path).exists()) {
        println!("cargo:rerun-if-changed={path}");
    }
    let mut status = vec!["status", "--porcelain", "--untracked-files=normal", "--"];
    status.extend_from_slice(BUILT_FROM);
    // Dirty is only claimed when git could say so; a failing status leaves it out.
    let dirty = git_raw(&status).is_some_and(|out| !out.trim().is_empty());
    Some(if dirty { format!("{commit}-dirty") } else { commit })
}

/// Asks git where a file of the repository lives (worktrees keep HEAD and the index
/// apart from the shared refs), and watches it if it is there.
fn watch_git_path(name: &str) {
    if let Some(path) = git(&["rev-parse", "--git-path", name]) {
        if Path::new(&path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}

/// One line of git's answer, trimmed; `None` when git is missing or fails.
fn git(args: &[&str]) -> Option<String> {
    let out = git_raw(args)?;
    let line = out.trim();
    (!line.is_empty()).then(|| line.to_string())
}

fn git_raw(args: &[&str]) -> Option<String> {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")?;
    let out = Command::new("git").args(args).current_dir(manifest).output().ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8(out.stdout).ok()
}
