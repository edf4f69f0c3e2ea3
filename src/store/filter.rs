//! The WHERE clause of a list, on either engine: only the conditions given, each followed by its
//! bound value (sqlx's `QueryBuilder`). Never `($n IS NULL OR …)`, which neither SQLite's planner
//! nor a generic PostgreSQL plan answers from an index, and no SQL put together with `format!`:
//! every piece of text is a constant, every value a bound parameter.

use chrono::{DateTime, Utc};
use sqlx::{Database, Encode, QueryBuilder, Type};
use uuid::Uuid;

/// A value a condition compares with.
pub(super) enum Value<'a> {
    Text(&'a str),
    /// Text made from what was asked (a search range's ends).
    Owned(String),
    Id(Uuid),
    Time(DateTime<Utc>),
}

impl Value<'_> {
    /// Binds the value onto `query`.
    pub fn push_to<DB>(&self, query: &mut QueryBuilder<DB>)
    where
        DB: Database,
        for<'t> &'t str: Encode<'t, DB> + Type<DB>,
        for<'t> Uuid: Encode<'t, DB> + Type<DB>,
        for<'t> DateTime<Utc>: Encode<'t, DB> + Type<DB>,
    {
        match self {
            Value::Text(text) => query.push_bind(*text),
            Value::Owned(text) => query.push_bind(text.as_str()),
            Value::Id(id) => query.push_bind(*id),
            Value::Time(time) => query.push_bind(*time),
        };
    }
}

impl<'a> From<&'a str> for Value<'a> {
    fn from(text: &'a str) -> Value<'a> {
        Value::Text(text)
    }
}

impl From<Uuid> for Value<'_> {
    fn from(id: Uuid) -> Self {
        Value::Id(id)
    }
}

impl From<DateTime<Utc>> for Value<'_> {
    fn from(time: DateTime<Utc>) -> Self {
        Value::Time(time)
    }
}

/// One condition: the SQL before its value, the value, then the SQL after it (closing a
/// sub-select); a condition without a value is its SQL alone.
struct Condition<'a> {
    before: &'static str,
    value: Option<Value<'a>>,
    after: &'static str,
}

/// The conditions of a list query, in the order given.
#[derive(Default)]
pub(super) struct Conditions<'a> {
    given: Vec<Condition<'a>>,
}

impl<'a> Conditions<'a> {
    /// `before` followed by the value (`"status = "`), when there is a value.
    pub fn and<V: Into<Value<'a>>>(self, before: &'static str, value: Option<V>) -> Self {
        self.and_within(before, value, "")
    }

    /// `before`, the value, then `after` (a value inside a sub-select), when there is a value.
    pub fn and_within<V: Into<Value<'a>>>(
        mut self,
        before: &'static str,
        value: Option<V>,
        after: &'static str,
    ) -> Self {
        if let Some(value) = value {
            self.given.push(Condition { before, value: Some(value.into()), after });
        }
        self
    }

    /// `condition`, a constant without a value, when `wanted`.
    pub fn and_if(mut self, condition: &'static str, wanted: bool) -> Self {
        if wanted {
            self.given.push(Condition { before: condition, value: None, after: "" });
        }
        self
    }

    /// `select WHERE … ORDER BY order`, then `LIMIT $n` when there is a limit: the list's
    /// statement, to which more may be pushed. `select` is written in constant pieces (a table's
    /// column list among them).
    pub fn list<DB>(
        &self,
        select: &[&'static str],
        order: &'static str,
        limit: Option<u32>,
    ) -> QueryBuilder<DB>
    where
        DB: Database<Arguments: Default>,
        for<'t> &'t str: Encode<'t, DB> + Type<DB>,
        for<'t> Uuid: Encode<'t, DB> + Type<DB>,
        for<'t> DateTime<Utc>: Encode<'t, DB> + Type<DB>,
        for<'t> i64: Encode<'t, DB> + Type<DB>,
    {
        let mut query = QueryBuilder::new(select.concat());
        self.push_to(&mut query, " WHERE ");
        query.push(" ORDER BY ").push(order);
        if let Some(limit) = limit {
            query.push(" LIMIT ").push_bind(i64::from(limit));
        }
        query
    }

    /// Pushes the conditions onto `query`, the first after `first` (`" WHERE "`, or `" AND "` after
    /// conditions of its own), the others after `" AND "`.
    pub fn push_to<DB>(&self, query: &mut QueryBuilder<DB>, first: &'static str)
    where
        DB: Database,
        for<'t> &'t str: Encode<'t, DB> + Type<DB>,
        for<'t> Uuid: Encode<'t, DB> + Type<DB>,
        for<'t> DateTime<Utc>: Encode<'t, DB> + Type<DB>,
    {
        for (n, condition) in self.given.iter().enumerate() {
            query.push(if n == 0 { first } else { " AND " });
            query.push(condition.before);
            if let Some(value) = &condition.value {
                value.push_to(query);
            }
            query.push(condition.after);
        }
    }
}
