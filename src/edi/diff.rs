//! A segment-by-segment comparison of two interchanges, for a person deciding about a held
//! delivery: which segments the new one removed, added or kept against the original. Pure and
//! bounded: common leading and trailing segments are matched first, and what remains is compared
//! only while the table stays under [`MAX_CELLS`].

use std::borrow::Cow;

use super::{Standard, standard_at, start_of};

/// One segment of the comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change<'a> {
    Same(Cow<'a, str>),
    Removed(Cow<'a, str>),
    Added(Cow<'a, str>),
}

/// The largest comparison table (segments of one × segments of the other, after the common ends).
pub const MAX_CELLS: usize = 4_000_000;

/// The interchange's segments as text, each with its terminator, line breaks between them dropped:
/// the terminator is read from the envelope (the byte after ISA16, UNA's 9th, `'` for EDIFACT
/// without UNA); anything else is split into lines.
pub fn segments(payload: &[u8]) -> Vec<Cow<'_, str>> {
    let body = &payload[start_of(payload)..];
    let terminator = match standard_at(body) {
        Some(Standard::X12) => super::x12::segment_terminator(body),
        Some(Standard::Edifact) if body.starts_with(b"UNA") => body.get(8).copied(),
        Some(Standard::Edifact) => Some(b'\''),
        None => None,
    }
    .unwrap_or(b'\n');
    body.split_inclusive(|&b| b == terminator)
        .map(|segment| segment.trim_ascii())
        .filter(|segment| !segment.is_empty())
        .map(String::from_utf8_lossy)
        .collect()
}

/// How `new` differs from `old`, in order; `None` when the differing middle is too large to compare.
pub fn compare<'a>(old: &[Cow<'a, str>], new: &[Cow<'a, str>]) -> Option<Vec<Change<'a>>> {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suffix =
        old[prefix..].iter().rev().zip(new[prefix..].iter().rev()).take_while(|(a, b)| a == b).count();
    let (a, b) = (&old[prefix..old.len() - suffix], &new[prefix..new.len() - suffix]);
    if a.len().saturating_mul(b.len()) > MAX_CELLS {
        return None;
    }
    // Longest common subsequence lengths of every pair of suffixes.
    let width = b.len() + 1;
    let mut lengths = vec![0u32; (a.len() + 1) * width];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lengths[i * width + j] = if a[i] == b[j] {
                lengths[(i + 1) * width + j + 1] + 1
            } else {
                lengths[(i + 1) * width + j].max(lengths[i * width + j + 1])
            };
        }
    }
    let mut changes: Vec<Change<'a>> = old[..prefix].iter().cloned().map(Change::Same).collect();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            changes.push(Change::Same(a[i].clone()));
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || lengths[(i + 1) * width + j] >= lengths[i * width + j + 1])
        {
            changes.push(Change::Removed(a[i].clone()));
            i += 1;
        } else {
            changes.push(Change::Added(b[j].clone()));
            j += 1;
        }
    }
    changes.extend(old[old.len() - suffix..].iter().cloned().map(Change::Same));
    Some(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(changes: &[Change<'_>]) -> Vec<String> {
        changes
            .iter()
            .map(|change| match change {
                Change::Same(s) => format!(" {s}"),
                Change::Removed(s) => format!("-{s}"),
                Change::Added(s) => format!("+{s}"),
            })
            .collect()
    }

    #[test]
    fn x12_segments_split_on_the_isa_terminator_and_a_changed_amount_shows_as_one_pair() {
        let isa = "ISA*00*          *00*          *ZZ*ACME           *ZZ*BUYER          *240101*1200*U*00401*000000001*0*P*>~";
        let old = format!("{isa}\nGS*IN*A*B~ST*810*0001~TDS*100~SE*3*0001~");
        let new = format!("{isa}\nGS*IN*A*B~ST*810*0001~TDS*250~SE*3*0001~");
        let (old, new) = (segments(old.as_bytes()), segments(new.as_bytes()));
        assert_eq!(old.len(), 5);
        let changes = compare(&old, &new).unwrap();
        assert_eq!(
            texts(&changes)[2..],
            [" ST*810*0001~", "-TDS*100~", "+TDS*250~", " SE*3*0001~"].map(String::from)
        );
    }

    #[test]
    fn an_unpadded_isa_gives_its_terminator_too() {
        // The parser accepts an ISA whose elements are not padded: byte 106 is then inside GS.
        let unpadded =
            b"ISA*00**00**ZZ*ACME*ZZ*BUYER*240101*1200*U*00401*000000001*0*P*>~GS*IN*A*B~ST*810*0001~";
        let found = segments(unpadded);
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(found[1], "GS*IN*A*B~");
    }

    #[test]
    fn edifact_uses_the_una_terminator() {
        let payload = b"UNA:+.? !UNB+UNOC:3+A+B+240101:1200+1!UNH+1+INVOIC:D:96A:UN!UNZ+1+1!";
        assert_eq!(
            segments(payload),
            ["UNA:+.? !", "UNB+UNOC:3+A+B+240101:1200+1!", "UNH+1+INVOIC:D:96A:UN!", "UNZ+1+1!"]
        );
    }

    #[test]
    fn insertions_and_removals_in_the_middle_are_found() {
        let old: Vec<Cow<'_, str>> = ["a", "b", "c", "d", "e"].into_iter().map(Cow::from).collect();
        let new: Vec<Cow<'_, str>> = ["a", "x", "c", "e", "y"].into_iter().map(Cow::from).collect();
        assert_eq!(texts(&compare(&old, &new).unwrap()), [" a", "-b", "+x", " c", "-d", " e", "+y"]);
    }

    #[test]
    fn a_middle_too_large_to_compare_is_refused() {
        let old: Vec<Cow<'_, str>> = (0..2001).map(|n| Cow::from(format!("a{n}"))).collect();
        let new: Vec<Cow<'_, str>> = (0..2001).map(|n| Cow::from(format!("b{n}"))).collect();
        assert!(compare(&old, &new).is_none());
    }
}
