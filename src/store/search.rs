//! The interchange list (`GET /v1/interchanges`, the console's list and search box): its filters,
//! keyset and, for a search text (`InterchangeFilter::q`), the lookups that find it.

use chrono::{DateTime, Utc};
use sqlx::{Database, Encode, QueryBuilder, Type};
use uuid::Uuid;

use super::filter::{Conditions, Value};
use super::{Store, StoreError};
use crate::edi::Standard;
use crate::inbox::Status;
use crate::inbox::resource::{InterchangeSummary, Order, Page};

/// Filters of `GET /v1/interchanges`.
#[derive(Clone, Debug, Default)]
pub struct InterchangeFilter {
    /// What a person types into a search box: an invoice number, a purchase order, a control
    /// number or its first digits (leading zeros aside: `1142` finds `000001142`), a sender id, or
    /// an invoice total as stated (`8000.00`).
    pub q: Option<String>,
    pub sender: Option<String>,
    pub control_number: Option<String>,
    pub status: Option<Status>,
    /// Only interchanges from one of this partner's sender identities.
    pub partner: Option<String>,
    pub standard: Option<Standard>,
    /// Received at or after.
    pub received_from: Option<DateTime<Utc>>,
    /// Received before.
    pub received_before: Option<DateTime<Utc>>,
    /// Only interchanges holding a duplicate: an invoice booked before, kept and not booked again.
    pub holding_duplicates: bool,
    /// Which way the list runs; `cursor` is the last id of the page before, that way.
    pub order: Order,
    pub cursor: Option<Uuid>,
    pub limit: u32,
}

impl Store {
    /// Newest (or oldest) first, keyset-paginated on the time-ordered id.
    pub async fn interchanges(
        &self,
        filter: &InterchangeFilter,
    ) -> Result<Page<InterchangeSummary>, StoreError> {
        const SELECT: &str = "SELECT id, status, standard, sender_id, control_number, received_at, \
            (SELECT COUNT(*) FROM deliveries d WHERE d.source = inbox.source AND d.message_id = inbox.message_id) \
                AS deliveries, \
            (SELECT MAX(d.received_at) FROM deliveries d WHERE d.source = inbox.source \
                AND d.message_id = inbox.message_id) AS last_delivery_at, \
            (SELECT p.partner_id FROM partner_identities p WHERE p.role = 'sender' AND p.identity = inbox.source \
                LIMIT 1) AS partner_id, \
            (SELECT COUNT(*) FROM invoices i WHERE i.inbox_id = inbox.id) AS invoice_count, \
            (SELECT i.number FROM invoices i WHERE i.inbox_id = inbox.id ORDER BY i.id LIMIT 1) AS first_invoice_number, \
            (SELECT CAST(i.total AS TEXT) FROM invoices i WHERE i.inbox_id = inbox.id ORDER BY i.id LIMIT 1) \
                AS first_invoice_total, \
            (SELECT i.currency FROM invoices i WHERE i.inbox_id = inbox.id ORDER BY i.id LIMIT 1) \
                AS first_invoice_currency \
            FROM inbox";
        let search = Search::new(filter.q.as_deref());
        let items: Vec<InterchangeSummary> = on_pool!(self, pool => search
            .list(SELECT, &Self::interchange_filters(filter), filter).build_query_as().fetch_all(pool).await?);
        Ok(Page::new(items, filter.limit, |item| item.id))
    }

    /// How many interchanges `filter` keeps (its cursor aside), counted up to `up_to`: a figure
    /// beside the list that costs at most `up_to` index entries, however many match.
    pub async fn interchanges_counted(
        &self,
        filter: &InterchangeFilter,
        up_to: u32,
    ) -> Result<u32, StoreError> {
        const COUNT: &str = "SELECT COUNT(*) FROM (SELECT inbox.id FROM inbox";
        let search = Search::new(filter.q.as_deref());
        let first = InterchangeFilter { cursor: None, limit: up_to, ..filter.clone() };
        let counted: i64 = on_pool!(self, pool => search.list(COUNT, &Self::interchange_filters(filter), &first)
            .push(") AS counted").build_query_scalar().fetch_one(pool).await?);
        Ok(u32::try_from(counted).unwrap_or(u32::MAX))
    }

    /// The conditions of an interchange list beside its search text and keyset.
    fn interchange_filters(filter: &InterchangeFilter) -> Conditions<'_> {
        Conditions::default()
            .and("inbox.sender_id = ", filter.sender.as_deref())
            .and("inbox.control_number = ", filter.control_number.as_deref())
            .and("inbox.status = ", filter.status.map(Status::as_str))
            .and_within(
                "inbox.source IN (SELECT identity FROM partner_identities WHERE role = 'sender' AND partner_id = ",
                filter.partner.as_deref(),
                ")",
            )
            .and("inbox.standard = ", filter.standard.map(Standard::as_str))
            .and("inbox.received_at >= ", filter.received_from)
            .and("inbox.received_at < ", filter.received_before)
            .and_if(
                "inbox.id IN (SELECT inbox_id FROM invoices WHERE duplicate_of IS NOT NULL)",
                filter.holding_duplicates,
            )
    }
}

/// Where a lookup reads an interchange's id: from `inbox` itself, or from its invoices.
#[derive(Clone, Copy)]
enum Key {
    Inbox,
    Invoice,
}

impl Key {
    /// The lookup's statement up to its own condition.
    fn select(self) -> &'static str {
        match self {
            Key::Inbox => "SELECT inbox.id AS id FROM inbox WHERE ",
            Key::Invoice => {
                "SELECT DISTINCT v.inbox_id AS id FROM invoices v JOIN inbox ON inbox.id = v.inbox_id WHERE "
            }
        }
    }

    /// The interchange's id as the lookup's index orders it.
    fn column(self) -> &'static str {
        match self {
            Key::Inbox => "inbox.id",
            Key::Invoice => "v.inbox_id",
        }
    }

    /// Past the cursor, the way the list runs.
    fn push_past<DB>(self, query: &mut QueryBuilder<DB>, order: Order, cursor: Option<Uuid>)
    where
        DB: Database,
        for<'t> Uuid: Encode<'t, DB> + Type<DB>,
    {
        if let Some(cursor) = cursor {
            let past = match order {
                Order::Newest => " < ",
                Order::Oldest => " > ",
            };
            query.push(" AND ").push(self.column()).push(past).push_bind(cursor);
        }
    }

    /// `ORDER BY` the way the list runs, then `LIMIT limit`.
    fn push_ordered<DB>(self, query: &mut QueryBuilder<DB>, order: Order, limit: u32)
    where
        DB: Database,
        for<'t> i64: Encode<'t, DB> + Type<DB>,
    {
        let direction = match order {
            Order::Newest => " DESC LIMIT ",
            Order::Oldest => " ASC LIMIT ",
        };
        query.push(" ORDER BY ").push(self.column()).push(direction).push_bind(i64::from(limit));
    }
}

/// One index lookup of a search text: where it reads, and its condition.
struct Lookup<'a> {
    key: Key,
    parts: Vec<(&'static str, Value<'a>)>,
}

/// The fewest characters (leading zeros aside) a search text matches control numbers by as a
/// prefix; a shorter one matches them exactly.
const MIN_PREFIX: usize = 3;

/// A search text as lookups of the interchanges it finds: its control number starting with the
/// text (leading zeros aside; exactly, for a text shorter than [`MIN_PREFIX`]), or its sender id, or one of its invoices' number, purchase order or
/// total being the text. Each reads an index in the list's order (`inbox_control_digits`,
/// `inbox_sender`, `invoices_number_inbox`, `invoices_purchase_order`, `invoices_total_text`).
pub(super) struct Search<'a> {
    lookups: Vec<Lookup<'a>>,
}

impl<'a> Search<'a> {
    /// No lookups without a text: the list reads `inbox` alone.
    pub fn new(q: Option<&'a str>) -> Search<'a> {
        let Some(q) = q else { return Search { lookups: Vec::new() } };
        let digits = q.trim_start_matches('0');
        let control = match prefix_range(digits) {
            (from, _) if from.is_empty() => vec![("inbox.control_number = ", Value::from(q))],
            // A prefix of one or two characters would match a tenth or a hundredth of every
            // interchange, read and sorted whole: such a text finds its control number exactly.
            _ if digits.chars().count() < MIN_PREFIX => {
                vec![("ltrim(inbox.control_number, '0') = ", Value::from(digits))]
            }
            (from, until) => {
                let mut parts = vec![("ltrim(inbox.control_number, '0') >= ", Value::Owned(from))];
                if let Some(until) = until {
                    parts.push((" AND ltrim(inbox.control_number, '0') < ", Value::Owned(until)));
                }
                parts
            }
        };
        let one = |key, before| Lookup { key, parts: vec![(before, Value::from(q))] };
        Search {
            lookups: vec![
                Lookup { key: Key::Inbox, parts: control },
                one(Key::Inbox, "inbox.sender_id = "),
                one(Key::Invoice, "v.number = "),
                one(Key::Invoice, "v.purchase_order = "),
                one(Key::Invoice, "CAST(v.total AS TEXT) = "),
            ],
        }
    }

    /// `select` (of `inbox`, ending in `FROM inbox`) for one page: the interchanges `filters` keep,
    /// past the page's `cursor` the way its `order` runs, at most its `limit`. With a text, each lookup reads its index
    /// in that order under the same filters and stops at `limit` ids, so a text every interchange
    /// matches costs one page per lookup, not a pass over all of them.
    pub fn list<DB>(
        &self,
        select: &'static str,
        filters: &Conditions<'_>,
        page: &InterchangeFilter,
    ) -> QueryBuilder<DB>
    where
        DB: Database<Arguments: Default>,
        for<'t> &'t str: Encode<'t, DB> + Type<DB>,
        for<'t> Uuid: Encode<'t, DB> + Type<DB>,
        for<'t> DateTime<Utc>: Encode<'t, DB> + Type<DB>,
        for<'t> i64: Encode<'t, DB> + Type<DB>,
    {
        let (order, cursor, limit) = (page.order, page.cursor, page.limit);
        let mut query = QueryBuilder::new(select);
        if self.lookups.is_empty() {
            query.push(" WHERE TRUE");
            filters.push_to(&mut query, " AND ");
            Key::Inbox.push_past(&mut query, order, cursor);
        } else {
            query.push(" WHERE id IN (");
            for (n, lookup) in self.lookups.iter().enumerate() {
                query.push(if n == 0 { "SELECT id FROM (" } else { " UNION SELECT id FROM (" });
                query.push(lookup.key.select());
                for (before, value) in &lookup.parts {
                    query.push(*before);
                    value.push_to(&mut query);
                }
                filters.push_to(&mut query, " AND ");
                lookup.key.push_past(&mut query, order, cursor);
                lookup.key.push_ordered(&mut query, order, limit);
                query.push(") AS found");
            }
            query.push(")");
        }
        Key::Inbox.push_ordered(&mut query, order, limit);
        query
    }
}

/// The range of text that starts with `prefix` in any collation that orders digits and letters
/// as usual: from `prefix` to the prefix with its last character raised by one (`1142` → `1143`,
/// `1149` → `115`, a `9`s-only prefix has no end). Comparing a column with both uses its index,
/// where `LIKE 'x%'` would need a collation-specific one.
fn prefix_range(prefix: &str) -> (String, Option<String>) {
    let mut end: Vec<char> = prefix.chars().collect();
    while let Some(last) = end.pop() {
        let raised = match last {
            '9' => continue,
            other => char::from_u32(u32::from(other) + 1),
        };
        if let Some(raised) = raised {
            end.push(raised);
            return (prefix.to_owned(), Some(end.into_iter().collect()));
        }
    }
    (prefix.to_owned(), None)
}

#[cfg(test)]
mod tests {
    use super::prefix_range;

    #[test]
    fn a_prefix_range_ends_where_the_prefix_stops_matching() {
        assert_eq!(prefix_range("1142"), ("1142".into(), Some("1143".into())));
        assert_eq!(prefix_range("1149"), ("1149".into(), Some("115".into())));
        assert_eq!(prefix_range("199"), ("199".into(), Some("2".into())));
        assert_eq!(prefix_range("99"), ("99".into(), None));
        assert_eq!(prefix_range("AB"), ("AB".into(), Some("AC".into())));
    }
}
