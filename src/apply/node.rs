//! The apply file as a tree that remembers the line of every key and value (read with
//! toml_edit, which keeps the spans toml's serde form drops), and a decoder over one
//! table that refuses unknown keys and wrong types with the place they are at.

use std::collections::BTreeMap;

/// A refusal at a place in the file: `LINE: PATH: MESSAGE` once the file is named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub line: usize,
    pub path: String,
    pub message: String,
}

impl Problem {
    pub fn new(line: usize, path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            line,
            path: path.into(),
            message: message.into(),
        }
    }
}

/// `base.key`, or `key` at the top of the file.
pub fn join(base: &str, key: &str) -> String {
    if base.is_empty() {
        key.to_string()
    } else {
        format!("{base}.{key}")
    }
}

/// A value with the line it is written on.
#[derive(Debug, Clone, PartialEq)]
pub struct At<T> {
    pub v: T,
    pub line: usize,
}

#[derive(Debug, Clone)]
pub struct Node {
    pub line: usize,
    pub kind: Kind,
}

#[derive(Debug, Clone)]
pub enum Kind {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Date,
    Array(Vec<Node>),
    Table(Vec<Entry>),
}

#[derive(Debug, Clone)]
pub struct Entry {
    pub key: String,
    pub line: usize,
    pub value: Node,
}

impl Kind {
    /// What a person calls this kind of value, for "expected X, found Y".
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Str(_) => "a string",
            Kind::Int(_) => "an integer",
            Kind::Float(_) => "a float",
            Kind::Bool(_) => "a boolean",
            Kind::Date => "a date",
            Kind::Array(_) => "an array",
            Kind::Table(_) => "a table",
        }
    }
}

/// Byte offsets to line numbers (1-based).
struct Lines(Vec<usize>);

impl Lines {
    fn of(text: &str) -> Self {
        Self(
            std::iter::once(0)
                .chain(text.match_indices('\n').map(|(i, _)| i + 1))
                .collect(),
        )
    }

    fn line(&self, span: Option<std::ops::Range<usize>>, fallback: usize) -> usize {
        match span {
            Some(s) => self.0.partition_point(|&start| start <= s.start),
            None => fallback,
        }
    }
}

/// Parses the text; a syntax error is a problem at its line (TOML 1.0).
pub fn parse(text: &str) -> Result<Node, Problem> {
    let lines = Lines::of(text);
    let doc = toml_edit::ImDocument::parse(text).map_err(|e| {
        // toml_edit's message may run over several lines; the refusal is one.
        let message: Vec<&str> = e.message().lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        Problem::new(
            lines.line(e.span(), 1),
            "",
            format!("not valid TOML: {}", message.join("; ")),
        )
    })?;
    Ok(Node {
        line: 1,
        kind: Kind::Table(table(&lines, doc.as_table(), 1)),
    })
}

fn table(lines: &Lines, t: &toml_edit::Table, parent: usize) -> Vec<Entry> {
    let here = lines.line(t.span(), parent);
    t.iter()
        .filter_map(|(k, item)| {
            let line = lines.line(t.key(k).and_then(toml_edit::Key::span), here);
            let value = self::item(lines, item, line)?;
            Some(Entry {
                key: k.to_string(),
                line,
                value,
            })
        })
        .collect()
}

fn item(lines: &Lines, item: &toml_edit::Item, line: usize) -> Option<Node> {
    Some(match item {
        toml_edit::Item::None => return None,
        toml_edit::Item::Value(v) => value(lines, v, line),
        toml_edit::Item::Table(t) => Node {
            line: lines.line(t.span(), line),
            kind: Kind::Table(table(lines, t, line)),
        },
        toml_edit::Item::ArrayOfTables(a) => Node {
            line,
            kind: Kind::Array(
                a.iter()
                    .map(|t| Node {
                        line: lines.line(t.span(), line),
                        kind: Kind::Table(table(lines, t, line)),
                    })
                    .collect(),
            ),
        },
    })
}

fn value(lines: &Lines, v: &toml_edit::Value, parent: usize) -> Node {
    use toml_edit::Value as V;
    let line = lines.line(v.span(), parent);
    let kind = match v {
        V::String(s) => Kind::Str(s.value().clone()),
        V::Integer(i) => Kind::Int(*i.value()),
        V::Float(f) => Kind::Float(*f.value()),
        V::Boolean(b) => Kind::Bool(*b.value()),
        V::Datetime(_) => Kind::Date,
        V::Array(a) => Kind::Array(a.iter().map(|e| value(lines, e, line)).collect()),
        V::InlineTable(t) => Kind::Table(
            t.iter()
                .map(|(k, e)| {
                    let key_line = lines.line(t.key(k).and_then(toml_edit::Key::span), line);
                    Entry {
                        key: k.to_string(),
                        line: key_line,
                        value: value(lines, e, key_line),
                    }
                })
                .collect(),
        ),
    };
    Node { line, kind }
}

/// Where each key of a table (and each element of its arrays) is written: the place a
/// use case's refusal of a field is reported at.
#[derive(Debug, Clone, Default)]
pub struct Place {
    pub path: String,
    pub line: usize,
    keys: BTreeMap<String, (usize, Vec<(usize, String)>)>,
}

impl Place {
    /// A problem with `field` (a key of this table, or `""` for the table itself). For
    /// an array, the element the message names (`uri: …`, `` `uri` ``) is pointed at.
    pub fn problem(&self, field: &str, message: impl Into<String>) -> Problem {
        let message = message.into();
        let Some((line, elements)) = self.keys.get(field) else {
            return Problem::new(self.line, self.path.clone(), message);
        };
        let named = elements.iter().enumerate().find(|(_, (_, text))| {
            !text.is_empty() && (message.starts_with(&format!("{text}:")) || message.contains(&format!("`{text}`")))
        });
        match named {
            Some((i, (line, _))) => Problem::new(*line, format!("{}.{field}[{i}]", self.path), message),
            None => Problem::new(*line, format!("{}.{field}", self.path), message),
        }
    }

    /// Whether the table has this key.
    pub fn has(&self, field: &str) -> bool {
        self.keys.contains_key(field)
    }

    /// A problem with element `i` of the array `field`.
    pub fn element(&self, field: &str, i: usize, message: impl Into<String>) -> Problem {
        let line = self
            .keys
            .get(field)
            .and_then(|(_, e)| e.get(i).map(|(l, _)| *l))
            .unwrap_or(self.line);
        Problem::new(line, format!("{}.{field}[{i}]", self.path), message)
    }
}

/// One table of the file being decoded: every key must be one of `known`.
pub struct Fields<'a> {
    pub place: Place,
    entries: &'a [Entry],
}

impl<'a> Fields<'a> {
    pub fn new(node: &'a Node, path: String, known: &[&str]) -> Result<Self, Problem> {
        let Kind::Table(entries) = &node.kind else {
            return Err(Problem::new(
                node.line,
                path,
                format!("expected a table, found {}", node.kind.name()),
            ));
        };
        let mut place = Place {
            path,
            line: node.line,
            keys: BTreeMap::new(),
        };
        for e in entries {
            if !known.contains(&e.key.as_str()) {
                return Err(Problem::new(
                    e.line,
                    join(&place.path, &e.key),
                    format!("unknown key; expected one of {}", known.join(", ")),
                ));
            }
            let elements = match &e.value.kind {
                Kind::Array(items) => items
                    .iter()
                    .map(|n| {
                        let text = match &n.kind {
                            Kind::Str(s) => s.trim().to_string(),
                            _ => String::new(),
                        };
                        (n.line, text)
                    })
                    .collect(),
                _ => Vec::new(),
            };
            place.keys.insert(e.key.clone(), (e.line, elements));
        }
        Ok(Self { place, entries })
    }

    pub fn get(&self, key: &str) -> Option<&'a Entry> {
        self.entries.iter().find(|e| e.key == key)
    }

    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    fn wrong(&self, e: &Entry, want: &str) -> Problem {
        Problem::new(
            e.value.line,
            join(&self.place.path, &e.key),
            format!("expected {want}, found {}", e.value.kind.name()),
        )
    }

    pub fn str(&self, key: &str) -> Result<Option<At<String>>, Problem> {
        match self.get(key) {
            None => Ok(None),
            Some(e) => match &e.value.kind {
                Kind::Str(s) => Ok(Some(At {
                    v: s.clone(),
                    line: e.line,
                })),
                _ => Err(self.wrong(e, "a string")),
            },
        }
    }

    pub fn bool(&self, key: &str) -> Result<Option<At<bool>>, Problem> {
        match self.get(key) {
            None => Ok(None),
            Some(e) => match e.value.kind {
                Kind::Bool(b) => Ok(Some(At { v: b, line: e.line })),
                _ => Err(self.wrong(e, "true or false")),
            },
        }
    }

    pub fn int(&self, key: &str) -> Result<Option<At<i64>>, Problem> {
        match self.get(key) {
            None => Ok(None),
            Some(e) => match e.value.kind {
                Kind::Int(n) => Ok(Some(At { v: n, line: e.line })),
                _ => Err(self.wrong(e, "an integer (seconds)")),
            },
        }
    }

    /// An array of strings.
    pub fn strs(&self, key: &str) -> Result<Option<Vec<At<String>>>, Problem> {
        let Some(e) = self.get(key) else {
            return Ok(None);
        };
        let Kind::Array(items) = &e.value.kind else {
            return Err(self.wrong(e, "an array of strings"));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, n)| match &n.kind {
                Kind::Str(s) => Ok(At {
                    v: s.clone(),
                    line: n.line,
                }),
                other => Err(Problem::new(
                    n.line,
                    format!("{}[{i}]", join(&self.place.path, &e.key)),
                    format!("expected a string, found {}", other.name()),
                )),
            })
            .collect::<Result<_, _>>()
            .map(Some)
    }

    /// An array of tables (`[[x.key]]` or `key = [{…}]`).
    pub fn tables(&self, key: &str) -> Result<Option<Vec<&'a Node>>, Problem> {
        let Some(e) = self.get(key) else {
            return Ok(None);
        };
        let Kind::Array(items) = &e.value.kind else {
            return Err(self.wrong(e, "an array of tables"));
        };
        for (i, n) in items.iter().enumerate() {
            if !matches!(n.kind, Kind::Table(_)) {
                return Err(Problem::new(
                    n.line,
                    format!("{}[{i}]", join(&self.place.path, &e.key)),
                    format!("expected a table, found {}", n.kind.name()),
                ));
            }
        }
        Ok(Some(items.iter().collect()))
    }

    /// A table read as JSON (a JWK Set, a user's claims).
    pub fn json(&self, key: &str) -> Result<Option<At<serde_json::Value>>, Problem> {
        let Some(e) = self.get(key) else {
            return Ok(None);
        };
        if !matches!(e.value.kind, Kind::Table(_)) {
            return Err(self.wrong(e, "a table"));
        }
        let path = join(&self.place.path, &e.key);
        Ok(Some(At {
            v: to_json(&e.value, &path)?,
            line: e.line,
        }))
    }
}

fn to_json(n: &Node, path: &str) -> Result<serde_json::Value, Problem> {
    use serde_json::Value;
    Ok(match &n.kind {
        Kind::Str(s) => Value::from(s.clone()),
        Kind::Int(i) => Value::from(*i),
        Kind::Bool(b) => Value::from(*b),
        Kind::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .ok_or_else(|| Problem::new(n.line, path, "not a finite number"))?,
        Kind::Date => return Err(Problem::new(n.line, path, "dates have no JSON form; quote the value")),
        Kind::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, e)| to_json(e, &format!("{path}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        Kind::Table(entries) => Value::Object(
            entries
                .iter()
                .map(|e| Ok((e.key.clone(), to_json(&e.value, &format!("{path}.{}", e.key))?)))
                .collect::<Result<_, Problem>>()?,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_counted_from_one_and_kept_per_key_and_element() {
        let root = parse("# c\n[[clients]]\nclient_id = \"a\"\nredirect_uris = [\n  \"x\",\n  \"y\",\n]\n").unwrap();
        let Kind::Table(top) = &root.kind else { panic!() };
        let Kind::Array(clients) = &top[0].value.kind else {
            panic!()
        };
        let f = Fields::new(&clients[0], "clients[a]".into(), &["client_id", "redirect_uris"]).unwrap();
        assert_eq!(f.str("client_id").unwrap().unwrap().line, 3);
        let uris = f.strs("redirect_uris").unwrap().unwrap();
        assert_eq!((uris[0].line, uris[1].line), (5, 6));
        let p = f.place.problem("redirect_uris", "y: not absolute");
        assert_eq!((p.line, p.path.as_str()), (6, "clients[a].redirect_uris[1]"));
    }

    #[test]
    fn unknown_keys_wrong_types_and_bad_syntax_are_placed() {
        let root = parse("[[apps]]\nid = \"a\"\nurll = \"x\"\n").unwrap();
        let Kind::Table(top) = &root.kind else { panic!() };
        let Kind::Array(apps) = &top[0].value.kind else {
            panic!()
        };
        let e = Fields::new(&apps[0], "apps[a]".into(), &["id", "url"]).err().unwrap();
        assert_eq!((e.line, e.path.as_str()), (3, "apps[a].urll"));
        let f = Fields::new(&apps[0], "apps[a]".into(), &["id", "urll"]).unwrap();
        assert!(f.bool("id").unwrap_err().message.contains("found a string"));
        let bad = parse("a = 1\nb = [\n").unwrap_err();
        assert!(bad.line >= 2 && bad.message.starts_with("not valid TOML"), "{bad:?}");
    }
}
