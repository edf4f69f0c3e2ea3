//! Two invoices compared as booked: every value accounting receives, never where it was read (the
//! positions of segments differ whenever the same invoice arrives in another interchange). Used to
//! tell a resent invoice (the same) from a re-used number (other content), and to show a person
//! which fields differ.

use super::{Invoice, InvoiceLine, LineSources, Party};

/// A field whose booked value differs between two invoices; a single value's two versions as a
/// person reads them (the earlier first), none for a list (lines, taxes, …).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    pub field: &'static str,
    pub values: Option<(String, String)>,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.values {
            Some((earlier, later)) => write!(f, "{} ({earlier} → {later})", self.field),
            None => f.write_str(self.field),
        }
    }
}

impl Invoice {
    /// The fields whose booked value differs from `earlier`'s, in the order of the model; none when
    /// both book the same invoice. Amounts compare as numbers (`20.0` is `20.00`).
    pub fn differences(&self, earlier: &Invoice) -> Vec<Difference> {
        fn text(value: Option<impl ToString>) -> String {
            value.map_or_else(|| "none".to_owned(), |value| value.to_string())
        }
        let mut found = Vec::new();
        let mut value = |field, same: bool, earlier: String, later: String| {
            if !same {
                found.push(Difference { field, values: Some((earlier, later)) });
            }
        };
        value(
            "kind",
            self.kind == earlier.kind,
            earlier.kind.as_str().to_owned(),
            self.kind.as_str().to_owned(),
        );
        value(
            "number",
            self.number.trim() == earlier.number.trim(),
            earlier.number.clone(),
            self.number.clone(),
        );
        value(
            "issue_date",
            self.issue_date == earlier.issue_date,
            earlier.issue_date.to_string(),
            self.issue_date.to_string(),
        );
        value(
            "purchase_order",
            self.purchase_order == earlier.purchase_order,
            text(earlier.purchase_order.as_ref()),
            text(self.purchase_order.as_ref()),
        );
        value(
            "original_invoice",
            self.original_invoice == earlier.original_invoice,
            text(earlier.original_invoice.as_ref()),
            text(self.original_invoice.as_ref()),
        );
        value(
            "currency",
            self.currency == earlier.currency,
            text(earlier.currency.as_ref()),
            text(self.currency.as_ref()),
        );
        value("total", self.total == earlier.total, earlier.total.to_string(), self.total.to_string());
        value(
            "tax_total",
            self.tax_total == earlier.tax_total,
            text(earlier.tax_total),
            text(self.tax_total),
        );
        for (field, earlier, later) in [
            ("seller", &earlier.seller, &self.seller),
            ("buyer", &earlier.buyer, &self.buyer),
            ("invoicee", &earlier.invoicee, &self.invoicee),
            ("payee", &earlier.payee, &self.payee),
            ("ship_to", &earlier.ship_to, &self.ship_to),
        ] {
            let shown = |party: &Option<Party>| {
                party.as_ref().map_or_else(
                    || "none".to_owned(),
                    |p| {
                        format!(
                            "{} {}:{}",
                            text(p.name.as_ref()),
                            text(p.qualifier.as_ref()),
                            text(p.id.as_ref())
                        )
                    },
                )
            };
            value(field, earlier == later, shown(earlier), shown(later));
        }
        let lists = [
            (
                "taxes",
                unplaced(&self.taxes, |t| t.segment = None) == unplaced(&earlier.taxes, |t| t.segment = None),
            ),
            ("lines", unplaced(&self.lines, unplace_line) == unplaced(&earlier.lines, unplace_line)),
            (
                "allowances_charges",
                unplaced(&self.allowances_charges, |c| c.segment = None)
                    == unplaced(&earlier.allowances_charges, |c| c.segment = None),
            ),
            (
                "payment_terms",
                unplaced(&self.payment_terms, |t| t.segment = None)
                    == unplaced(&earlier.payment_terms, |t| t.segment = None),
            ),
            (
                "stated_totals",
                unplaced(&self.stated_totals, |t| t.segment = None)
                    == unplaced(&earlier.stated_totals, |t| t.segment = None),
            ),
        ];
        found.extend(
            lists.into_iter().filter(|(_, same)| !same).map(|(field, _)| Difference { field, values: None }),
        );
        found
    }
}

impl Invoice {
    /// A digest of what [`Invoice::differences`] compares: two invoices that book the same have the
    /// same digest (amounts hash as numbers), with foldhash's fixed seed (not SipHash: a fifth of
    /// the cost, and no attacker gains from a collision of two of its own invoices but booking one). Cheap enough to take of every invoice of a 20,000-
    /// invoice interchange, to tell a repeat within one interchange from a re-used number without
    /// holding the invoices.
    pub fn content_digest(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        fn party(h: &mut impl Hasher, party: &Option<Party>) {
            party.as_ref().map(|p| (&p.name, &p.qualifier, &p.id)).hash(h);
        }
        fn charges(h: &mut impl Hasher, charges: &[super::AllowanceCharge]) {
            charges.len().hash(h);
            for c in charges {
                (c.kind == super::AllowanceOrCharge::Allowance, &c.code, c.amount, c.percentage).hash(h);
            }
        }
        let mut h = std::hash::BuildHasher::build_hasher(&foldhash::fast::FixedState::default());
        (self.kind.as_str(), self.number.trim(), self.issue_date, &self.purchase_order, &self.currency)
            .hash(&mut h);
        self.original_invoice.hash(&mut h);
        (self.total, self.tax_total).hash(&mut h);
        for p in [&self.seller, &self.buyer, &self.invoicee, &self.payee, &self.ship_to] {
            party(&mut h, p);
        }
        self.lines.len().hash(&mut h);
        for l in &self.lines {
            (l.number, l.quantity, &l.unit, l.unit_price, l.price_kind.map(super::PriceKind::as_str))
                .hash(&mut h);
            (l.price_basis, &l.description, l.amount).hash(&mut h);
            l.product_ids.iter().map(|p| (&p.qualifier, &p.id)).for_each(|p| p.hash(&mut h));
            charges(&mut h, &l.allowances_charges);
        }
        self.taxes.len().hash(&mut h);
        for t in &self.taxes {
            (&t.tax_type, &t.category, t.rate, t.taxable_amount, t.amount).hash(&mut h);
        }
        charges(&mut h, &self.allowances_charges);
        self.payment_terms.len().hash(&mut h);
        for t in &self.payment_terms {
            (&t.terms_type, &t.basis, t.discount_percent, t.discount_due_date, t.discount_days).hash(&mut h);
            (t.net_due_date, t.net_days, t.discount_amount, &t.description).hash(&mut h);
        }
        self.stated_totals.len().hash(&mut h);
        for t in &self.stated_totals {
            (&t.code, t.amount).hash(&mut h);
        }
        h.finish()
    }
}

/// `items` with where each was read forgotten by `forget`.
fn unplaced<T: Clone>(items: &[T], forget: fn(&mut T)) -> Vec<T> {
    items
        .iter()
        .map(|item| {
            let mut item = item.clone();
            forget(&mut item);
            item
        })
        .collect()
}

fn unplace_line(line: &mut InvoiceLine) {
    line.sources = LineSources::default();
    line.allowances_charges.iter_mut().for_each(|c| c.segment = None);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edi::parse;

    const INVOICE: &str = "ISA*00*          *00*          *ZZ*ACME           *ZZ*BUYER          *240101*1200*U*00401*000000001*0*P*>~\
        GS*IN*ACME*BUYER*20240101*1200*1*X*004010~ST*810*0001~BIG*20240101*INV-1**PO-1~N1*SE*Acme*92*S1~\
        IT1*1*2*EA*10.00**VP*P1~TDS*2000~CTT*1~SE*7*0001~GE*1*1~IEA*1*000000001~";

    fn invoice(text: &str) -> std::sync::Arc<Invoice> {
        let mut unwrapped = Vec::new();
        let interchange = parse(text.as_bytes(), &mut unwrapped, crate::edi::Limits::default()).unwrap();
        let document = interchange.walk().unwrap().next().unwrap().unwrap();
        document.invoice.unwrap()
    }

    #[test]
    fn the_same_invoice_elsewhere_in_another_envelope_does_not_differ() {
        let first = invoice(INVOICE);
        // Another control number, and the invoice a segment further down (a REF before BIG).
        let moved = INVOICE
            .replace("000000001", "000000777")
            .replace("ST*810*0001~", "ST*810*0001~REF*ZZ*X~")
            .replace("SE*7*0001", "SE*8*0001");
        let again = invoice(&moved);
        assert_ne!(first.sources, again.sources, "the positions moved");
        assert_eq!(again.differences(&first), vec![]);
        assert_eq!(again.content_digest(), first.content_digest());
    }

    #[test]
    fn other_content_is_named_field_by_field_with_both_values() {
        let first = invoice(INVOICE);
        let other =
            invoice(&INVOICE.replace("TDS*2000", "TDS*2100").replace("IT1*1*2*EA*10.00", "IT1*1*2*EA*10.50"));
        let differences = other.differences(&first);
        let shown: Vec<_> = differences.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["total (20.00 → 21.00)", "lines", "stated_totals"]);
        assert_ne!(other.content_digest(), first.content_digest());
    }
}
