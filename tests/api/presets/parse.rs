//! The snippets read the way their applications read them: INI, env lines, `Field:
//! value` lines, JSON, and the YAML subset of the Argo CD preset.

use std::collections::BTreeMap;

use serde_json::Value;

pub type Flat = BTreeMap<String, String>;

fn flatten_json(prefix: &str, v: &Value, out: &mut Flat) {
    let key = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        Value::Object(m) => m.iter().for_each(|(k, v)| flatten_json(&key(k), v, out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, v)| flatten_json(&key(&i.to_string()), v, out)),
        Value::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The YAML the Argo CD preset writes: mappings, lists of scalars and `|` blocks
/// (whose text is YAML again), with `#` comments.
fn yaml(text: &str, out: &mut Flat, prefix: &str) {
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut counters: BTreeMap<String, usize> = BTreeMap::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let n = indent(line);
        while stack.last().is_some_and(|(at, _)| *at >= n) {
            stack.pop();
        }
        let parent = stack
            .last()
            .map(|(_, p)| p.clone())
            .unwrap_or_else(|| prefix.to_string());
        let join = |k: &str| {
            if parent.is_empty() {
                k.to_string()
            } else {
                format!("{parent}.{k}")
            }
        };
        if let Some(item) = line.trim().strip_prefix("- ") {
            let c = counters.entry(parent.clone()).or_default();
            out.insert(join(&c.to_string()), item.to_string());
            *c += 1;
            continue;
        }
        let (k, v) = line
            .trim()
            .split_once(':')
            .unwrap_or_else(|| panic!("not YAML: {line}"));
        let (path, v) = (join(k), v.trim());
        if v == "|" {
            let mut block = Vec::new();
            while i < lines.len() && (lines[i].trim().is_empty() || indent(lines[i]) > n) {
                block.push(lines[i]);
                i += 1;
            }
            let strip = block
                .iter()
                .filter(|l| !l.trim().is_empty())
                .map(|l| indent(l))
                .min()
                .unwrap_or(0);
            let text: Vec<&str> = block.iter().map(|l| l.get(strip..).unwrap_or("")).collect();
            yaml(&text.join("\n"), out, &path);
        } else if v.is_empty() {
            stack.push((n, path));
        } else {
            out.insert(path, v.to_string());
        }
    }
}

/// The snippet read the way its application reads it.
pub fn parse(format: &str, text: &str) -> Flat {
    let mut out = Flat::new();
    match format {
        "json" => flatten_json("", &serde_json::from_str(text).expect("the snippet is JSON"), &mut out),
        "yaml" => yaml(text, &mut out, ""),
        "ini" => {
            let mut section = String::new();
            for line in text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with(['#', ';']))
            {
                if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                    section = s.to_string();
                } else {
                    let (k, v) = line.split_once('=').unwrap_or_else(|| panic!("not INI: {line}"));
                    out.insert(format!("{section}.{}", k.trim()), v.trim().to_string());
                }
            }
        }
        "env" | "fields" => {
            let sep = if format == "env" { "=" } else { ": " };
            for line in text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')) {
                let (k, v) = line.split_once(sep).unwrap_or_else(|| panic!("not {format}: {line}"));
                assert!(!k.contains(' ') || format == "fields", "an env name has no space: {k}");
                // A value that is JSON (Paperless's providers) is read as JSON too.
                match serde_json::from_str::<Value>(v) {
                    Ok(j @ Value::Object(_)) => flatten_json(k, &j, &mut out),
                    _ => {
                        out.insert(k.to_string(), v.to_string());
                    }
                }
            }
        }
        other => panic!("unknown snippet format {other}"),
    }
    out
}
