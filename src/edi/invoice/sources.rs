//! Where a booked value was read: the position of its segment in the interchange (1-based, the
//! numbering of a 422's `segment_position`), so that a person can be shown the line of the file
//! behind a figure. Which element of that segment holds the value is fixed by the mapping (each
//! field below names it, and the mapping table in docs/edi-mapping.md). A value the service computed (a sum, a
//! quantity times a price) has none.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The segments an invoice's own values were read from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct InvoiceSources {
    /// BIG (BIG02) / BGM (1004); the kind is read from the same segment (BIG07 / 1001).
    #[schema(example = 4)]
    pub number: Option<usize>,
    /// BIG (BIG01) / DTM+137 or DTM+3 (2380).
    pub issue_date: Option<usize>,
    /// BIG (BIG04) / RFF+ON (1154).
    pub purchase_order: Option<usize>,
    /// REF (REF02) / RFF+OI or RFF+IV (1154).
    pub original_invoice: Option<usize>,
    /// CUR (CUR02) / CUX (6345), or the first MOA naming a currency (6345).
    pub currency: Option<usize>,
    /// TDS (TDS01) / the summary MOA whose qualifier gave the total (5004).
    pub total: Option<usize>,
    /// MOA+176, else MOA+124 (5004); none when the total is the sum of the taxes.
    pub tax_total: Option<usize>,
    /// The N1 / NAD of each party (N102, N103, N104 / C080, C082).
    pub seller: Option<usize>,
    pub buyer: Option<usize>,
    pub invoicee: Option<usize>,
    pub payee: Option<usize>,
    pub ship_to: Option<usize>,
}

/// The segments a line's values were read from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct LineSources {
    /// IT1 / LIN: the line and its product ids (an EDIFACT line's other ids are in its PIA).
    #[schema(example = 12)]
    pub line: Option<usize>,
    /// IT1 (IT102, IT103) / QTY+47 (6060, 6411).
    pub quantity: Option<usize>,
    /// IT1 (IT104, IT105) / the PRI that gave the price (5118, 5284).
    pub unit_price: Option<usize>,
    /// MOA+203 (5004); none when the amount is computed (always for X12).
    pub amount: Option<usize>,
    /// PID (PID05) / the IMD that gave the description (7008).
    pub description: Option<usize>,
}
