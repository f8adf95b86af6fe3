//! Administration: the operations behind both the admin pages and the admin JSON API,
//! each validated, applied in one transaction and written to the audit log with its
//! actor and, for edits, the record before and after.

pub mod apps;
pub mod branding;
pub mod claims;
pub mod clients;
pub mod deletion;
pub mod groups;
pub mod invitations;
pub mod mail;
pub mod overview;
pub mod presets;
pub mod providers;
pub mod registration;
pub mod resources;
pub mod users;

use crate::error::Internal;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::audit::Event;
use crate::db::DbError;

/// Who performs an administrative action: an administrator (username) or an admin
/// client (`client:<id>`), and from where.
#[derive(Debug, Clone)]
pub struct Actor {
    pub name: String,
    pub ip: Option<String>,
    /// The administrator's own user id, when the actor is a person.
    pub user_id: Option<i64>,
}

impl Actor {
    pub fn event(&self, name: &'static str) -> Event {
        Event::new(name).actor(&self.name).ip(self.ip.clone())
    }
}

pub use crate::domain::Problems;

#[derive(Debug)]
pub enum AdminError {
    NotFound(&'static str),
    Invalid(Problems),
    Conflict(String),
    Server(Internal),
}

impl AdminError {
    /// The refusal as one line for a command's output; `NotFound` names its record
    /// as the error does, unless the caller names it better.
    pub fn line(self, what: Option<&str>) -> String {
        match self {
            AdminError::NotFound(kind) => match what {
                Some(what) => format!("no {what}"),
                None => format!("no such {kind}"),
            },
            AdminError::Invalid(problems) => problems
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect::<Vec<_>>()
                .join("; "),
            AdminError::Conflict(message) => message,
            AdminError::Server(e) => e.to_string(),
        }
    }
}

impl From<DbError> for AdminError {
    fn from(e: DbError) -> Self {
        AdminError::Server(e.into())
    }
}

impl From<Internal> for AdminError {
    fn from(e: Internal) -> Self {
        AdminError::Server(e)
    }
}

impl From<crate::crypto::password::HashError> for AdminError {
    fn from(e: crate::crypto::password::HashError) -> Self {
        AdminError::Server(e.into())
    }
}

pub fn invalid(field: &str, message: impl Into<String>) -> AdminError {
    AdminError::Invalid(Problems::from([(field.to_string(), message.into())]))
}

/// A list request: search text, sort, order and the page (limit 1–200, default 50).
#[derive(Debug, Clone)]
pub struct ListQuery {
    pub q: Option<String>,
    pub sort: String,
    pub descending: bool,
    pub limit: i64,
    pub offset: i64,
    /// Further filters a list understands (the audit log's `event`, `who`, …).
    pub filters: BTreeMap<String, String>,
}

pub const DEFAULT_LIMIT: i64 = 50;
pub const MAX_LIMIT: i64 = 200;

impl Default for ListQuery {
    fn default() -> Self {
        Self {
            q: None,
            sort: String::new(),
            descending: false,
            limit: DEFAULT_LIMIT,
            offset: 0,
            filters: BTreeMap::new(),
        }
    }
}

impl ListQuery {
    /// Reads `q`, `sort` (a leading `-` for descending), `limit`, `offset` and any
    /// other parameters as filters.
    pub fn parse(query: &str) -> Result<Self, AdminError> {
        let mut out = ListQuery::default();
        for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
            let v = v.trim().to_string();
            if v.len() > 256 {
                return Err(invalid(&k, "at most 256 characters"));
            }
            match k.as_ref() {
                "q" => out.q = (!v.is_empty()).then_some(v),
                "sort" => {
                    out.descending = v.starts_with('-');
                    out.sort = v.trim_start_matches('-').to_string();
                }
                "limit" => {
                    out.limit = v
                        .parse()
                        .ok()
                        .filter(|n| (1..=MAX_LIMIT).contains(n))
                        .ok_or_else(|| invalid("limit", format!("a number from 1 to {MAX_LIMIT}")))?;
                }
                "offset" => {
                    out.offset = v
                        .parse()
                        .ok()
                        .filter(|n: &i64| *n >= 0)
                        .ok_or_else(|| invalid("offset", "a number from 0"))?;
                }
                _ if !v.is_empty() => {
                    out.filters.insert(k.into_owned(), v);
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// Refuses a sort key the list does not offer; empty means the default.
    pub fn sort_among(&self, allowed: &[&str], default: &str) -> Result<String, AdminError> {
        if self.sort.is_empty() {
            return Ok(default.to_string());
        }
        if allowed.contains(&self.sort.as_str()) {
            Ok(self.sort.clone())
        } else {
            Err(invalid("sort", format!("one of {}", allowed.join(", "))))
        }
    }
}

/// One page of a list, with what is needed to page on.
#[derive(Debug, Serialize)]
pub struct Listed<T> {
    pub items: Vec<T>,
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
}

impl<T> Listed<T> {
    /// The page `q` asks for of a list already filtered and sorted ascending (reversed
    /// for a descending sort), each entry shown with `view`.
    pub fn page<S>(mut all: Vec<S>, q: &ListQuery, view: impl Fn(&S) -> T) -> Self {
        if q.descending {
            all.reverse();
        }
        Listed {
            total: all.len() as i64,
            items: all
                .iter()
                .skip(usize::try_from(q.offset).unwrap_or(usize::MAX))
                .take(usize::try_from(q.limit).unwrap_or(0))
                .map(view)
                .collect(),
            limit: q.limit,
            offset: q.offset,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_queries_are_read_and_bounded() {
        let q = ListQuery::parse("q=ada&sort=-created_at&limit=10&offset=20&event=login.").unwrap();
        assert_eq!(q.q.as_deref(), Some("ada"));
        assert_eq!(
            (q.sort.as_str(), q.descending, q.limit, q.offset),
            ("created_at", true, 10, 20)
        );
        assert_eq!(q.filters["event"], "login.");
        assert!(ListQuery::parse("limit=0").is_err());
        assert!(ListQuery::parse("limit=201").is_err());
        assert!(ListQuery::parse("offset=-1").is_err());
        assert!(q.sort_among(&["username"], "username").is_err());
        assert_eq!(ListQuery::parse("").unwrap().sort_among(&["a"], "a").unwrap(), "a");
    }
}
