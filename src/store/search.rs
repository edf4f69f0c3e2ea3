//! The search box's text as conditions on the interchanges listed (`InterchangeFilter::q`).

use super::filter::{Conditions, Value};

/// `conditions` and, for a search text, the interchanges it finds: its control number starting with
/// the text (leading zeros aside), or its sender id, or one of its invoices' number, purchase order
/// or total being the text. A union of index lookups (`inbox_control_digits`, `inbox_sender`,
/// `invoices_number`, `invoices_purchase_order`, `invoices_total_text`), never a scan.
pub(super) fn interchanges<'a>(conditions: Conditions<'a>, q: Option<&'a str>) -> Conditions<'a> {
    let Some(q) = q else { return conditions };
    let digits = q.trim_start_matches('0');
    let mut parts: Vec<(&'static str, Value<'a>)> = Vec::with_capacity(6);
    match prefix_range(digits) {
        (from, _) if from.is_empty() => {
            parts.push(("id IN (SELECT id FROM inbox WHERE control_number = ", Value::from(q)))
        }
        (from, until) => {
            parts.push((
                "id IN (SELECT id FROM inbox WHERE ltrim(control_number, '0') >= ",
                Value::Owned(from),
            ));
            if let Some(until) = until {
                parts.push((" AND ltrim(control_number, '0') < ", Value::Owned(until)));
            }
        }
    }
    parts.extend([
        (" UNION SELECT id FROM inbox WHERE sender_id = ", Value::from(q)),
        (" UNION SELECT inbox_id FROM invoices WHERE number = ", Value::from(q)),
        (" UNION SELECT inbox_id FROM invoices WHERE purchase_order = ", Value::from(q)),
        (" UNION SELECT inbox_id FROM invoices WHERE CAST(total AS TEXT) = ", Value::from(q)),
    ]);
    conditions.and_all(parts, ")")
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
