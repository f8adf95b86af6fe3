//! How a statement and its arguments reach PostgreSQL: the shared SQL's `?N`
//! placeholders as `$N`, and each argument bound to the type PostgreSQL inferred.

use postgres::types::{IsNull, ToSql, Type};

use crate::db::sql::Value;

/// `?N` (the placeholders the shared SQL is written with) to PostgreSQL's `$N`,
/// leaving string literals and quoted identifiers alone.
pub(super) fn placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quote: Option<char> = None;
    for c in sql.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '?' => {
                out.push('$');
                continue;
            }
            None => {}
        }
        out.push(c);
    }
    out
}

/// Arguments bind to whatever type PostgreSQL inferred for the placeholder: an
/// integer to BIGINT, INTEGER, SMALLINT or BOOLEAN (flags are 0/1 in the shared SQL),
/// text to any text type, bytes to BYTEA.
impl ToSql for Value<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut postgres::types::private::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match *self {
            Value::Null(_) => Ok(IsNull::Yes),
            Value::Int(i) => match *ty {
                Type::INT8 => i.to_sql(ty, out),
                Type::INT4 => i32::try_from(i)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(i)?.to_sql(ty, out),
                Type::BOOL => (i != 0).to_sql(ty, out),
                _ => Err(format!("an integer cannot be bound to {ty}").into()),
            },
            Value::Text(s) => s.to_sql(ty, out),
            Value::Blob(b) => b.to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

#[cfg(test)]
mod tests {
    use super::placeholders;

    #[test]
    fn placeholders_become_dollars_outside_quotes() {
        assert_eq!(
            placeholders("SELECT '?1', \"a?\" FROM t WHERE a = ?1 AND b = ?12"),
            "SELECT '?1', \"a?\" FROM t WHERE a = $1 AND b = $12"
        );
        assert_eq!(placeholders("x LIKE ?1 ESCAPE '\\'"), "x LIKE $1 ESCAPE '\\'");
    }
}
