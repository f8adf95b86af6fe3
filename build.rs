//! Names the commit a binary was built from, for `tessera --version`, and compiles the
//! message catalogues of `locales/` into tables (`src/i18n/generate.rs`).
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
    let target = |key: &str| std::env::var(key).unwrap_or_default();
    if target("CARGO_CFG_TARGET_OS") == "linux" && target("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// The functions a server runs at start-up and per request are about 3 MB of the
/// executable's 17 MB of code, spread across all of it; the kernel maps a file page (or
/// a whole large folio of them) into the process when any byte of it runs, so a server
/// that has only started ends up with about 11 MB of code resident. `link/
/// hot-functions.txt` (written by `scripts/hot-functions.py` from a profile of a start,
/// a minute idle and each kind of request) lists those functions, and lld places them
/// first and in that order, so they share pages: about 2 MB of code resident instead.
///
/// Only where the link is lld: it is rustc's own linker on x86_64 Linux since Rust
/// 1.90, and GNU ld would refuse the option. A name the list has that this build does
/// not (another compiler or dependency version changes symbol hashes) is skipped
/// silently: the binary is correct either way, only less compact, and the script
/// says how much of its list the build it profiled still has. `TESSERA_HOT_TEXT=off`
/// links in the compiler's order, which the script profiles so that the list keeps
/// that order (the functions of one module next to each other, as they call each
/// other) rather than the order of a previous list.
fn hot_functions_first() {
    println!("cargo:rerun-if-changed=link/hot-functions.txt");
    println!("cargo:rerun-if-env-changed=TESSERA_HOT_TEXT");
    let var = |key: &str| std::env::var(key).unwrap_or_default();
    let lld_by_default = var("TARGET") == "x86_64-unknown-linux-gnu"
        && rustc_minor().is_some_and(|minor| minor >= 90)
        // A linker chosen in Cargo's configuration or in RUSTFLAGS may not be lld.
        && std::env::var_os("RUSTC_LINKER").is_none()
        && !var("CARGO_ENCODED_RUSTFLAGS").contains("link");
    let list = Path::new(&var("CARGO_MANIFEST_DIR")).join("link/hot-functions.txt");
    if var("PROFILE") == "release" && var("TESSERA_HOT_TEXT") != "off" && lld_by_default && list.is_file() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            list.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

/// The minor version of the compiler Cargo runs (`rustc 1.95.0 (…)` gives 95).
fn rustc_minor() -> Option<u32> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let out = Command::new(rustc).arg("--version").output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let version = text.split_whitespace().nth(1)?;
    let mut parts = version.split('.');
    (parts.next()? == "1").then_some(())?;
    parts.next()?.parse().ok()
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
    for path in BUILT_FROM {
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
