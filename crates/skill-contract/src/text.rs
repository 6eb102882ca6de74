//! Characters that change how a text reads without being seen: what a person deciding must be
//! shown written out, and what a key must not hold.

/// Whether `c` is invisible (zero-width, a byte-order mark) or changes the direction of the text
/// around it (the bidirectional embeddings, overrides, isolates and marks).
pub fn is_invisible_or_bidi(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{180e}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_changes_the_reading() {
        for c in ['\u{202e}', '\u{200b}', '\u{2066}', '\u{feff}', '\u{061c}'] {
            assert!(is_invisible_or_bidi(c), "{c:?}");
        }
        for c in ['a', 'é', '\n', ' ', '猫', '\u{2030}'] {
            assert!(!is_invisible_or_bidi(c), "{c:?}");
        }
    }
}
