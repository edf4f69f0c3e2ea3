//! The accounting file format: RFC 4180 CSV, one record per invoice line (an invoice without lines
//! gets one record with empty line columns), decimals exactly as received, CRLF line ends, a header
//! record naming the [`COLUMNS`]. A field that a spreadsheet would read as a formula (it starts with
//! `=`, `+`, `-`, `@`, a tab or a carriage return and is not a number) gets a leading `'`, as OWASP
//! advises against CSV injection: names and ids come from partners' interchanges.

use std::fmt::Display;

use crate::edi::invoice::Party;
use crate::inbox::resource::InvoiceResource;

/// The columns, in order.
pub const COLUMNS: [&str; 34] = [
    "invoice_id",
    "interchange_id",
    "invoice_number",
    "document_kind",
    "issue_date",
    "purchase_order",
    "currency",
    "invoice_total",
    "tax_total",
    "tax_rate",
    "seller_qualifier",
    "seller_id",
    "seller_name",
    "buyer_qualifier",
    "buyer_id",
    "buyer_name",
    "invoicee_qualifier",
    "invoicee_id",
    "invoicee_name",
    "payee_qualifier",
    "payee_id",
    "payee_name",
    "ship_to_qualifier",
    "ship_to_id",
    "ship_to_name",
    "line_number",
    "product_id",
    "description",
    "quantity",
    "unit",
    "unit_price",
    "price_kind",
    "price_basis",
    "line_amount",
];

/// The file: header and records; with the number of records (lines of the file after the header).
pub fn render(invoices: &[InvoiceResource]) -> (String, usize) {
    let mut out = String::new();
    let mut records = 0;
    record(&mut out, COLUMNS.iter().map(|c| c.to_string()));
    for resource in invoices {
        let invoice = &resource.invoice;
        let party = |party: &Option<Party>| {
            let field =
                |get: fn(&Party) -> Option<&str>| party.as_ref().and_then(|p| get(p).map(str::to_owned));
            [field(|p| p.qualifier.as_deref()), field(|p| p.id.as_deref()), field(|p| p.name.as_deref())]
        };
        let head = [
            Some(resource.id.to_string()),
            Some(resource.interchange_id.to_string()),
            Some(invoice.number.clone()),
            Some(invoice.kind.as_str().to_owned()),
            Some(invoice.issue_date.to_string()),
            invoice.purchase_order.clone(),
            invoice.currency.as_deref().map(str::to_owned),
            Some(invoice.total.to_string()),
            text(invoice.tax_total),
            text(invoice.tax_rate),
        ]
        .into_iter()
        .chain(party(&invoice.seller))
        .chain(party(&invoice.buyer))
        .chain(party(&invoice.invoicee))
        .chain(party(&invoice.payee))
        .chain(party(&invoice.ship_to));
        let head: Vec<Option<String>> = head.collect();
        let lines: Vec<[Option<String>; 9]> = invoice
            .lines
            .iter()
            .map(|line| {
                [
                    Some(line.number.to_string()),
                    line.product_id.as_deref().map(str::to_owned),
                    line.description.clone(),
                    Some(line.quantity.to_string()),
                    line.unit.as_deref().map(str::to_owned),
                    text(line.unit_price),
                    line.price_kind.map(|kind| kind.as_str().to_owned()),
                    text(line.price_basis),
                    Some(line.amount.to_string()),
                ]
            })
            .collect();
        let no_line = [const { None }; 9];
        for line in if lines.is_empty() { std::slice::from_ref(&no_line) } else { &lines[..] } {
            record(&mut out, head.iter().chain(line).map(|field| field.clone().unwrap_or_default()));
            records += 1;
        }
    }
    (out, records)
}

fn text(value: Option<impl Display>) -> Option<String> {
    value.map(|v| v.to_string())
}

/// `field`, with a `'` before it when a spreadsheet would run it as a formula; numbers (a negative
/// amount) stay numbers. The first character is compared in its NFKC form, since spreadsheets also
/// read a full-width `＝`, `＋`, `－` or `＠` (and the minus sign U+2212) as the ASCII one.
fn neutralized(field: String) -> String {
    use unicode_normalization::UnicodeNormalization;
    let first: String = field.chars().take(1).nfkc().collect();
    let formula = first.starts_with(['=', '+', '-', '@', '\t', '\r', '\u{2212}']);
    if formula && field.parse::<rust_decimal::Decimal>().is_err() { format!("'{field}") } else { field }
}

/// One record: fields quoted when they hold a comma, a quote or a line break (quotes doubled).
fn record(out: &mut String, fields: impl Iterator<Item = String>) {
    for (n, field) in fields.map(neutralized).enumerate() {
        if n > 0 {
            out.push(',');
        }
        if field.contains([',', '"', '\r', '\n']) {
            out.push('"');
            out.push_str(&field.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(&field);
        }
    }
    out.push_str("\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_with_separators_are_quoted() {
        let mut out = String::new();
        record(&mut out, ["plain", "a,b", "say \"hi\"", "two\nlines", ""].into_iter().map(String::from));
        assert_eq!(out, "plain,\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",\r\n");
    }

    #[test]
    fn formulas_are_neutralized_and_numbers_kept() {
        let mut out = String::new();
        let fields =
            ["=1+2", "+A1", "-2+3", "@SUM(A1)", "\tcmd", "\rx", "=HYPERLINK(\"h\")", "-12.50", "+7", "a=b"];
        record(&mut out, fields.into_iter().map(String::from));
        assert_eq!(
            out,
            "'=1+2,'+A1,'-2+3,'@SUM(A1),'\tcmd,\"'\rx\",\"'=HYPERLINK(\"\"h\"\")\",-12.50,+7,a=b\r\n"
        );
        let mut wide = String::new();
        let fields =
            ["\u{ff1d}1+2", "\u{ff0b}A1", "\u{ff0d}2+3", "\u{ff20}SUM(A1)", "\u{2212}2+3", "\u{ff21}"];
        record(&mut wide, fields.into_iter().map(String::from));
        assert_eq!(wide, "'\u{ff1d}1+2,'\u{ff0b}A1,'\u{ff0d}2+3,'\u{ff20}SUM(A1),'\u{2212}2+3,\u{ff21}\r\n");
    }
}
