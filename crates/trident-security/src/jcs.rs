//! RFC 8785 JSON Canonicalization Scheme (JCS) over [`serde_json::Value`].
//!
//! - Object members sorted by their names' UTF-16 code units (RFC 8785 §3.2.3).
//! - Strings: only `"`, `\` and C0 controls escaped (`\b \t \n \f \r`, else `\u00xx`);
//!   everything else literal UTF-8 (§3.2.2.2).
//! - Numbers: ECMAScript `Number.prototype.toString` of the IEEE 754 double (§3.2.2.3),
//!   e.g. `1.0` → `1`, `1e21` → `1e+21`, `0.000001` → `0.000001`, `1e-7` → `1e-7`.
//! - No whitespace.

use serde_json::Value;

/// The canonical (JCS) UTF-8 bytes of `value`.
pub fn canonicalize(value: &Value) -> Vec<u8> {
    let mut out = String::new();
    write_value(value, &mut out);
    out.into_bytes()
}

fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push('{');
            for (i, (k, v)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, out);
                out.push(':');
                write_value(v, out);
            }
            out.push('}');
        }
    }
}

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{0c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Largest integer a double holds exactly (2^53 - 1).
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

fn write_number(n: &serde_json::Number, out: &mut String) {
    if let Some(i) = n.as_u64().filter(|i| *i <= MAX_SAFE_INTEGER) {
        out.push_str(&i.to_string());
    } else if let Some(i) = n.as_i64().filter(|i| i.unsigned_abs() <= MAX_SAFE_INTEGER) {
        out.push_str(&i.to_string());
    } else {
        // Large integers and floats: what an ECMAScript engine would print for the double.
        out.push_str(&format_double(n.as_f64().unwrap_or(0.0)));
    }
}

/// ECMAScript `Number::toString(x)` (ECMA-262 §6.1.6.1.20) for a finite double.
/// Non-finite values have no JSON form; serde_json cannot hold them, so they print as `null`.
pub(crate) fn format_double(x: f64) -> String {
    if !x.is_finite() {
        return "null".to_owned();
    }
    if x == 0.0 {
        return "0".to_owned(); // also -0
    }
    if x < 0.0 {
        return format!("-{}", format_double(-x));
    }
    // Rust's `{:e}` prints the shortest digits that round-trip: "d[.ddd]e<exp>".
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let k = digits.len() as i32;
    // x = 0.digits × 10^n
    let n = exp + 1;
    if k <= n && n <= 21 {
        let mut s = digits;
        s.extend(std::iter::repeat_n('0', (n - k) as usize));
        s
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(n as usize);
        format!("{int}.{frac}")
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let sign = if e < 0 { '-' } else { '+' };
        let (first, rest) = digits.split_at(1);
        if rest.is_empty() {
            format!("{first}e{sign}{}", e.abs())
        } else {
            format!("{first}.{rest}e{sign}{}", e.abs())
        }
    }
}
