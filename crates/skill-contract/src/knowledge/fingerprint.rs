//! The state token of a knowledge slot: `st:` and the first 16 hex digits of the SHA-256 of the
//! state as JSON with sorted keys, `", "` and `": "` separators, non-ASCII unescaped and floats
//! written as Python writes them — so tokens agree with the platform's other implementations.

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::State;

/// Python's `repr` of a float: the shortest digits, fixed notation for 1e-4 ≤ |x| < 1e16 (with
/// `.0` when integral), else `d.ddde±XX`.
pub(crate) fn python_float(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    let scientific = format!("{:e}", f.abs());
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let point = exponent.parse::<i32>().unwrap_or(0) + 1;
    let sign = if f < 0.0 { "-" } else { "" };
    if point > -4 && point <= 16 {
        let body = if point <= 0 {
            format!("0.{}{digits}", "0".repeat((-point) as usize))
        } else if point as usize >= digits.len() {
            format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
        } else {
            format!("{}.{}", &digits[..point as usize], &digits[point as usize..])
        };
        format!("{sign}{body}")
    } else {
        let (first, rest) = digits.split_at(1);
        let mantissa = if rest.is_empty() { first.to_owned() } else { format!("{first}.{rest}") };
        let exponent = point - 1;
        format!("{sign}{mantissa}e{}{:02}", if exponent < 0 { '-' } else { '+' }, exponent.abs())
    }
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) if n.is_f64() => out.push_str(&python_float(n.as_f64().unwrap_or(0.0))),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => out.push_str(&serde_json::to_string(s).expect("invariant: strings serialize")),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&serde_json::to_string(key).expect("invariant: strings serialize"));
                out.push_str(": ");
                write(&map[key], out);
            }
            out.push('}');
        }
    }
}

/// The JSON text the token is computed from.
pub fn python_json(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// The token of a slot's state.
pub fn state_token(state: &State) -> String {
    let object = Value::Object(state.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
    let digest = Sha256::digest(python_json(&object).as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("st:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_empty_state_has_the_known_token() {
        assert_eq!(state_token(&State::new()), "st:44136fa355b3678a");
    }

    #[test]
    fn floats_are_written_as_python_writes_them() {
        let cases = [
            (1.0, "1.0"),
            (0.5, "0.5"),
            (-2.25, "-2.25"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.2345e-7, "1.2345e-07"),
            (123456789.125, "123456789.125"),
            (-0.0, "-0.0"),
            (1e300, "1e+300"),
        ];
        for (value, expected) in cases {
            assert_eq!(python_float(value), expected, "{value}");
        }
    }
}
