//! Text from a request as a log line or a stored field may hold it: cut to a bound, and escaped
//! so that it can neither forge a line nor colour a terminal.

/// `value` cut to at most `max` bytes, on a character boundary.
pub fn truncated(value: &str, max: usize) -> String {
    let mut end = value.len().min(max);
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    value[..end].to_owned()
}

/// Characters of a request's text a log line shows at most.
const MAX_LOGGED_CHARS: usize = 200;

/// Text from a request (an envelope's sender, a topic ARN, a transport id, an error quoting them) as
/// a log line may show it, in every log format: control characters and line or paragraph
/// separators escaped (`\n`, `\u{1b}`, `\u{2028}`), so that it can neither start a forged line
/// (in a terminal, or in a JavaScript reader of the JSON log) nor colour a terminal, and cut after
/// [`MAX_LOGGED_CHARS`] characters, so that a 5 MiB field costs the log a few hundred bytes.
pub struct Logged<'a>(pub &'a str);

impl std::fmt::Display for Logged<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::fmt::Write;
        for (n, c) in self.0.chars().enumerate() {
            if n == MAX_LOGGED_CHARS {
                let rest = self.0.chars().skip(n).map(char::len_utf8).sum::<usize>();
                return write!(f, "…(+{rest} bytes)");
            }
            if c.is_control()
                || matches!(
                    c,
                    '\u{200e}' | '\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
                )
            {
                write!(f, "{}", c.escape_unicode())?;
            } else {
                f.write_char(c)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logged_text_cannot_forge_a_line_or_colour_a_terminal_and_is_cut() {
        let forged = "arn:x\n2026-01-01T00:00:00Z  INFO forged\x1b[31mred\u{202e}";
        let shown = Logged(forged).to_string();
        assert_eq!(shown, "arn:x\\u{a}2026-01-01T00:00:00Z  INFO forged\\u{1b}[31mred\\u{202e}");
        let separated = Logged("a\u{2028}b\u{2029}c").to_string();
        assert_eq!(
            separated, "a\\u{2028}b\\u{2029}c",
            "line and paragraph separators end lines in JavaScript"
        );
        let huge = "é".repeat(5 * 1024 * 1024);
        let shown = Logged(&huge).to_string();
        assert!(shown.len() < 1024, "{} bytes", shown.len());
        assert!(
            shown.ends_with(&format!("…(+{} bytes)", huge.len() - 2 * MAX_LOGGED_CHARS)),
            "{}",
            &shown[390..]
        );
    }
}
