//! The message catalogues compiled into one table per locale, run by build.rs (this
//! file is not part of the crate).
//!
//! `locales/<tag>/*.txt` hold `key = text` lines (`#` starts a comment; `{name}` is a
//! placeholder filled at run time). English is the reference: its keys become the
//! fields of `Messages`, so a template or handler naming a key English lacks does not
//! compile. Another locale missing a key gets the English text and is listed in
//! `GAPS`, as is a key English does not have or a text whose placeholders differ from
//! English's; the catalogue test fails on any gap. A line that cannot be read fails
//! the build with its file and line.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

/// The locales compiled in, English first: the tag and the variant of `Locale`.
pub const LOCALES: &[(&str, &str)] = &[
    ("en", "En"),
    ("de", "De"),
    ("fr", "Fr"),
    ("es", "Es"),
    ("it", "It"),
    ("nl", "Nl"),
    ("pt", "Pt"),
];

type Catalogue = BTreeMap<String, String>;

/// Reads every catalogue under `dir` and writes the Rust source of the tables.
pub fn generate(dir: &Path) -> Result<String, String> {
    let mut all = Vec::new();
    for (tag, _) in LOCALES {
        all.push(read_locale(&dir.join(tag))?);
    }
    let english = &all[0];
    let mut out = String::new();
    out.push_str("/// Every message, one field per key of the English catalogue.\n");
    out.push_str("#[derive(Debug)]\n#[allow(missing_docs)]\npub struct Messages {\n");
    out.push_str("    pub locale: Locale,\n");
    for key in english.keys() {
        let _ = writeln!(out, "    pub {key}: &'static str,");
    }
    out.push_str("}\n\n");
    let mut gaps = Vec::new();
    for ((tag, variant), catalogue) in LOCALES.iter().zip(&all) {
        let _ = writeln!(out, "pub static {}: Messages = Messages {{", tag.to_uppercase());
        let _ = writeln!(out, "    locale: Locale::{variant},");
        for (key, english_text) in english {
            let text = match catalogue.get(key) {
                Some(text) => {
                    if placeholders(text) != placeholders(english_text) {
                        gaps.push(format!("{tag}: `{key}` has placeholders other than English's"));
                    }
                    text
                }
                None => {
                    gaps.push(format!("{tag}: `{key}` is missing"));
                    english_text
                }
            };
            let _ = writeln!(out, "    {key}: {text:?},");
        }
        out.push_str("};\n\n");
        for key in catalogue.keys().filter(|k| !english.contains_key(*k)) {
            gaps.push(format!("{tag}: `{key}` is not in the English catalogue"));
        }
    }
    out.push_str("/// What the catalogues lack against English (empty when complete).\n");
    out.push_str("pub static GAPS: &[&str] = &[\n");
    for gap in gaps {
        let _ = writeln!(out, "    {gap:?},");
    }
    out.push_str("];\n");
    Ok(out)
}

fn read_locale(dir: &Path) -> Result<Catalogue, String> {
    let mut catalogue = Catalogue::new();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        for (n, line) in text.lines().enumerate() {
            let at = || format!("{}:{}", file.display(), n + 1);
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                return Err(format!("{}: expected `key = text`", at()));
            };
            let (key, value) = (key.trim(), value.trim());
            if key.is_empty()
                || !key.starts_with(|c: char| c.is_ascii_lowercase())
                || !key
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            {
                return Err(format!("{}: a key is lowercase letters, digits and `_`", at()));
            }
            if key == "locale" {
                return Err(format!("{}: `locale` is reserved", at()));
            }
            if value.is_empty() {
                return Err(format!("{}: `{key}` has no text", at()));
            }
            if catalogue.insert(key.to_string(), value.to_string()).is_some() {
                return Err(format!("{}: `{key}` is defined twice", at()));
            }
        }
    }
    Ok(catalogue)
}

/// The `{name}` placeholders of a text, as a set.
fn placeholders(text: &str) -> BTreeSet<&str> {
    let mut found = BTreeSet::new();
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else { break };
        found.insert(&after[..end]);
        rest = &after[end + 1..];
    }
    found
}
