//! Tests of the 810 and INVOIC mapping (`invoice.rs`): required data located, totals and dates read
//! as the code lists say, disagreements reported as warnings.

use crate::edi::{EdiError, read};

const X12: &str = "ISA*00*          *00*          *ZZ*ACME           *ZZ*BUYER          *260317*1015*U*00401*000000007*0*P*>~\
GS*IN*ACME*BUYER*20260317*1015*7*X*004010~ST*810*0001~BIG*20260317*INV-7~IT1*1*2*EA*1.50~TDS*300~SE*5*0001~GE*1*7~IEA*1*000000007~";

const INVOIC: &str = "UNB+UNOC:3+S:14+R:14+260317:1015+9'UNH+1+INVOIC:D:96A:UN'BGM+380+RE-1+9'DTM+137:20260317:102'\
CUX+2:EUR:4'LIN+1++P:EN'QTY+47:2'MOA+203:10.00'UNS+S'MOA+79:10.00'MOA+125:10.00'MOA+124:1.90'MOA+77:11.90'UNT+13+1'UNZ+1+9'";

fn error_of(text: &str) -> EdiError {
    read(text.as_bytes()).unwrap().documents().unwrap_err()
}

#[test]
fn required_810_data_is_located() {
    let cases = [
        ("BIG*20260317*INV-7~", "BIG**INV-7~", Some(4), Some("BIG01")),
        ("BIG*20260317*INV-7~", "BIG*20260317~", Some(4), Some("BIG02")),
        ("BIG*20260317*INV-7~", "BIG*2026031*INV-7~", Some(4), Some("BIG01")),
        ("TDS*300~", "TDS*~", Some(6), Some("TDS01")),
        ("TDS*300~", "TDS*3.00~", Some(6), Some("TDS01")),
        ("IT1*1*2*EA*1.50~", "IT1*1*2*EA*1,50~", Some(5), Some("IT104")),
        ("IT1*1*2*EA*1.50~", "IT1*1**EA*1.50~", Some(5), Some("IT102")),
        ("IT1*1*2*EA*1.50~", "IT1*1*99999999999999999999*EA*99999999999999999999~", Some(5), None),
    ];
    for (from, to, position, element) in cases {
        let error = error_of(&X12.replace(from, to));
        assert_eq!(
            (error.segment_position, error.element.as_deref()),
            (position, element),
            "{to}: {error:?}"
        );
    }
    // A missing BIG or TDS is reported at the ST of its transaction set.
    let without_tds = X12.replace("TDS*300~", "").replace("SE*5*", "SE*4*");
    assert_eq!(error_of(&without_tds).segment.as_deref(), Some("ST"));
}

#[test]
fn required_invoic_data_is_located() {
    let cases = [
        ("BGM+380+RE-1+9'", "BGM+380++9'", Some(3), Some("BGM02")),
        ("DTM+137:20260317:102'", "DTM+137::102'", Some(4), Some("DTM01")),
        ("DTM+137:20260317:102'", "DTM+137:20261317:102'", Some(4), Some("DTM01")),
        // Format 102 is CCYYMMDD: twelve digits under it are no date, not a date and a time.
        ("DTM+137:20260317:102'", "DTM+137:199910060000:102'", Some(4), Some("DTM01")),
        ("DTM+137:20260317:102'", "DTM+137:202603171099:203'", Some(4), Some("DTM01")),
        ("DTM+137:20260317:102'", "DTM+137:20260317:718'", Some(4), Some("DTM01")),
        ("MOA+77:11.90'", "MOA+77:11.9O'", Some(13), Some("MOA01")),
        (
            "QTY+47:2'MOA+203:10.00'",
            "QTY+47:99999999999999999999'PRI+AAA:99999999999999999999'",
            Some(6),
            None,
        ),
    ];
    for (from, to, position, element) in cases {
        let error = error_of(&INVOIC.replace(from, to));
        assert_eq!(
            (error.segment_position, error.element.as_deref()),
            (position, element),
            "{to}: {error:?}"
        );
    }
    for (missing, count) in [
        ("DTM+137:20260317:102'", 12),
        ("MOA+79:10.00'MOA+125:10.00'MOA+124:1.90'MOA+77:11.90'", 9),
        ("BGM+380+RE-1+9'", 12),
    ] {
        let text = INVOIC.replace(missing, "").replace("UNT+13+1", &format!("UNT+{count}+1"));
        assert_eq!(error_of(&text).segment.as_deref(), Some("UNH"), "without {missing}");
    }
    let no_total =
        INVOIC.replace("MOA+79:10.00'", "").replace("MOA+77:11.90'", "").replace("UNT+13+1", "UNT+11+1");
    let message = error_of(&no_total).message;
    assert!(
        message.contains("MOA 77, 86, 39, 9, 128 or 79") && message.ends_with("it has MOA 125, MOA 124"),
        "{message}"
    );
}

/// Dates and totals follow the code lists: DTM 137 (document date) or 3 (invoice date) in
/// format 102, 203 or 204; the total from MOA 77, 86, 39, 9, 128 or 79, first found first.
#[test]
fn invoic_dates_and_totals_follow_the_code_lists() {
    let invoice = |text: &str| {
        let documents = read(text.as_bytes()).unwrap().documents().unwrap();
        documents[0].invoice.clone().unwrap()
    };
    let dated_3 = INVOIC.replace("DTM+137:20260317:102'", "DTM+3:202603181015:203'");
    assert_eq!(invoice(&dated_3).issue_date.to_string(), "2026-03-18");
    let both = INVOIC.replace("DTM+137:20260317:102'", "DTM+3:20260318:102'DTM+137:20260317:102'");
    assert_eq!(invoice(&both.replace("UNT+13+1", "UNT+14+1")).issue_date.to_string(), "2026-03-17");
    let seconds = INVOIC.replace("DTM+137:20260317:102'", "DTM+137:20260316235959:204'");
    assert_eq!(invoice(&seconds).issue_date.to_string(), "2026-03-16");
    // A library supplier's totals: 9 (amount due), 129, 125 and 124.
    let due = INVOIC.replace("MOA+79:10.00'", "MOA+9:11.90'").replace("MOA+77:11.90'", "MOA+129:11.90'");
    assert_eq!(invoice(&due).total.to_string(), "11.90");
    assert_eq!(invoice(&INVOIC.replace("MOA+77:11.90'", "MOA+39:11.95'")).total.to_string(), "11.95");
}

#[test]
fn totals_beyond_range_are_warnings_not_panics() {
    let huge = "79228162514264337593543950335";
    let text = X12
        .replace("IT1*1*2*EA*1.50~", &format!("IT1*1*1*EA*{huge}~IT1*2*1*EA*{huge}~"))
        .replace("SE*5*", "SE*6*");
    let documents = read(text.as_bytes()).unwrap().documents().unwrap();
    let warnings = &documents[0].warnings;
    assert!(warnings.iter().any(|w| w.message.contains("beyond the range")), "{warnings:?}");
}

#[test]
fn invoic_totals_are_cross_checked_as_warnings() {
    let documents = read(INVOIC.as_bytes()).unwrap().documents().unwrap();
    assert!(documents[0].warnings.is_empty(), "{:?}", documents[0].warnings);
    let off = INVOIC.replace("MOA+79:10.00'", "MOA+79:12.00'").replace("MOA+77:11.90'", "MOA+77:12.90'");
    let warnings = &read(off.as_bytes()).unwrap().documents().unwrap()[0].warnings;
    let positions: Vec<_> = warnings.iter().map(|w| w.segment_position).collect();
    assert_eq!(positions, [Some(10), Some(13)], "{warnings:?}");
}

/// The one-message [`INVOIC`] as edited, its UNT01 counted again.
fn recounted(text: &str) -> String {
    let count =
        text.split('\'').skip_while(|s| !s.starts_with("UNH")).take_while(|s| !s.starts_with("UNT")).count()
            + 1;
    let start = text.find("UNT+").unwrap();
    let end = start + text[start..].find("+1'").unwrap();
    format!("{}UNT+{count}{}", &text[..start], &text[end..])
}

fn booked(text: &str) -> (crate::edi::Invoice, Vec<crate::edi::Warning>) {
    let text = if text.contains("UNT+") { recounted(text) } else { text.to_owned() };
    let mut documents = read(text.as_bytes()).unwrap().documents().unwrap();
    let document = documents.remove(0);
    (std::sync::Arc::unwrap_or_clone(document.invoice.unwrap()), document.warnings)
}

#[test]
fn an_invoic_without_uns_is_refused_for_its_missing_summary() {
    let error = error_of(&recounted(&INVOIC.replace("UNS+S'", "")));
    assert!(error.message.contains("has no UNS segment"), "{error:?}");
}

#[test]
fn the_document_kind_follows_big07_and_bgm_1001() {
    use crate::edi::invoice::DocumentKind::*;
    for (code, kind) in [
        ("380", Invoice),
        ("381", CreditNote),
        ("261", CreditNote),
        ("383", DebitNote),
        ("384", CorrectedInvoice),
    ] {
        assert_eq!(booked(&INVOIC.replace("BGM+380", &format!("BGM+{code}"))).0.kind, kind, "BGM {code}");
    }
    for (big07, kind) in
        [("", Invoice), ("DI", Invoice), ("CR", CreditNote), ("DR", DebitNote), ("CO", CorrectedInvoice)]
    {
        let text = X12.replace("BIG*20260317*INV-7~", &format!("BIG*20260317*INV-7*****{big07}~"));
        assert_eq!(booked(&text).0.kind, kind, "BIG07 {big07}");
    }
}

#[test]
fn a_line_price_is_the_preferred_kind_with_its_basis() {
    use crate::edi::invoice::PriceKind;
    let priced = |prices: &str| {
        let line =
            booked(&INVOIC.replace("MOA+203:10.00'", &format!("MOA+203:10.00'{prices}"))).0.lines.remove(0);
        (line.unit_price.map(|p| p.to_string()), line.price_kind, line.price_basis.map(|b| b.to_string()))
    };
    assert_eq!(priced("PRI+AAB:6'PRI+AAA:5'"), (Some("5".into()), Some(PriceKind::Net), None));
    assert_eq!(priced("PRI+CAL:4'PRI+INV:5'"), (Some("5".into()), Some(PriceKind::Invoice), None));
    assert_eq!(priced("PRI+AAA:500:::100'"), (Some("500".into()), Some(PriceKind::Net), Some("100".into())));
    // X12 IT105 HP: the price is per hundred.
    let x12 = X12.replace("IT1*1*2*EA*1.50~", "IT1*1*200*EA*1.50*HP~");
    let (invoice, warnings) = booked(&x12);
    assert_eq!((invoice.lines[0].amount, invoice.lines[0].price_basis), (3.into(), Some(100.into())));
    assert!(warnings.iter().all(|w| !w.message.contains("TDS01")), "{warnings:?}");
}

#[test]
fn a_line_amount_that_is_not_quantity_times_price_is_a_warning() {
    let text = INVOIC.replace("MOA+203:10.00'", "MOA+203:10.00'PRI+AAA:4.00'");
    let (_, warnings) = booked(&text);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].segment_position, Some(8));
    assert_eq!(warnings[0].message, "line 1 amount 10.00 differs from quantity × net price ÷ basis (8.00)");
}

#[test]
fn a_second_invoice_with_the_same_number_is_a_warning() {
    let set = "ST*810*0002~BIG*20260317*INV-7~IT1*1*2*EA*1.50~TDS*300~SE*5*0002~";
    let text = X12.replace("GE*1*7~", &format!("{set}GE*2*7~"));
    let documents = read(text.as_bytes()).unwrap().documents().unwrap();
    assert!(documents[0].warnings.iter().all(|w| !w.message.contains("also the number")));
    let repeated: Vec<_> =
        documents[1].warnings.iter().filter(|w| w.message.contains("also the number")).collect();
    assert_eq!(repeated.len(), 1, "{:?}", documents[1].warnings);
    assert_eq!(
        repeated[0].message,
        "invoice number INV-7 is also the number of document 0001 in this interchange"
    );
}

#[test]
fn the_isa_is_fixed_width_with_a_published_version() {
    let cases = [
        ("*00*          *00*          *", "*00* *00* *", "ISA02"),
        ("*ZZ*ACME           *", "*ZZ*ACME*", "ISA06"),
        ("*ZZ*BUYER          *", "*ZZ*BUYER*", "ISA08"),
        ("*U*00401*", "*U*00040*", "ISA12"),
        ("*U*00401*", "*^*00401*", "ISA11"),
        ("*U*00401*", "*U*00501*", "ISA11"),
    ];
    for (from, to, element) in cases {
        let error = error_of(&X12.replace(from, to));
        assert_eq!(
            (error.segment_position, error.element.as_deref()),
            (Some(1), Some(element)),
            "{to}: {error:?}"
        );
    }
    // 00501 with a repetition separator is as the standard says.
    assert!(read(X12.replace("*U*00401*", "*^*00501*").as_bytes()).unwrap().documents().is_ok());
    // A lenient partner's ISA only needs its elements.
    let short = X12.replace("*ZZ*ACME           *", "*ZZ*ACME*");
    assert!(read(short.as_bytes()).unwrap().lenient().documents().is_ok());
}

/// Patterns of real INVOICs (a food wholesaler's EANCOM and a library supplier's book-trade
/// invoices) that the mapping must read as their senders meant.
#[test]
fn real_invoic_patterns_are_read_as_meant() {
    // A sub-line (LIN C829 `1`: the pack's content in consumer units) is no invoice line.
    let sub_line = INVOIC.replace("MOA+203:10.00'", "MOA+203:10.00'LIN+2++P:EN+1:1'QTY+59:6:PCE'");
    let (invoice, warnings) = booked(&sub_line);
    assert_eq!(invoice.lines.len(), 1, "{:?}", invoice.lines);
    assert!(warnings.is_empty(), "{warnings:?}");
    // One rate's amount and taxable amount in two TAX groups are one entry of the breakdown.
    let split = INVOIC.replace(
        "MOA+125:10.00'MOA+124:1.90'",
        "TAX+7+VAT+++:::19+S'MOA+124:1.90'TAX+7+VAT+++:::19+S'MOA+125:10.00'",
    );
    let (invoice, _) = booked(&split);
    assert_eq!(invoice.taxes.len(), 1, "{:?}", invoice.taxes);
    let tax = &invoice.taxes[0];
    assert_eq!(
        (tax.rate, tax.taxable_amount, tax.amount),
        (Some(19.into()), Some(10.into()), Some("1.90".parse().unwrap()))
    );
    // A document without lines (a summary of others) reconciles its total with its net amount.
    let summary = INVOIC.replace("LIN+1++P:EN'QTY+47:2'MOA+203:10.00'", "");
    let (invoice, warnings) = booked(&summary);
    assert!(invoice.lines.is_empty());
    assert!(warnings.is_empty(), "{warnings:?}");
    // The book trade names the author (IMD 009) before the title (050): the title describes.
    let described =
        INVOIC.replace("QTY+47:2'", "IMD+L+009+:::Beukes, Lauren'IMD+L+050+:::Broken monsters'QTY+47:2'");
    assert_eq!(booked(&described).0.lines[0].description.as_deref(), Some("Broken monsters"));
    // The total tax (MOA 176) stated inside the summary's tax group is the stated tax total.
    let in_group = INVOIC.replace("MOA+124:1.90'", "TAX+7+VAT+++:::19+S'MOA+176:1.90'");
    let (invoice, warnings) = booked(&in_group);
    assert_eq!(invoice.tax_total, Some("1.90".parse().unwrap()), "{warnings:?}");
    assert!(invoice.sources.tax_total.is_some());
    // An order named after a LIN is that line's, not the invoice's.
    let line_order = INVOIC.replace("QTY+47:2'", "QTY+47:2'RFF+ON:PO-LINE-1'");
    assert_eq!(booked(&line_order).0.purchase_order, None);
    let both = line_order.replace("CUX+2:EUR:4'", "RFF+ON:PO-HEAD'CUX+2:EUR:4'");
    assert_eq!(booked(&both).0.purchase_order.as_deref(), Some("PO-HEAD"));
    // A charge stated only in the summary is booked; one that repeats the header's is not again.
    let freight = INVOIC.replace("MOA+77:11.90'", "MOA+77:11.90'ALC+C++++FC'MOA+23:5.00'");
    let charges = booked(&freight).0.allowances_charges;
    assert_eq!(charges.len(), 1, "{charges:?}");
    assert_eq!((charges[0].code.as_deref(), charges[0].amount), (Some("FC"), Some(5.into())));
    let repeated = freight.replace("CUX+2:EUR:4'", "CUX+2:EUR:4'ALC+C++++FC'MOA+23:5.00'");
    let charges = booked(&repeated).0.allowances_charges;
    assert_eq!(charges.len(), 1, "the header's alone: {charges:?}");
    assert!(charges[0].segment < booked(&repeated).0.sources.total, "{charges:?}");
}
