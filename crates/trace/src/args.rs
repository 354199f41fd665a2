//! Reading one field of a trace's record, naming the field when it is
//! missing or not what it should be.
use serde_json::{Map, Value};

/// The most elements a list field (ranks, split sizes) may hold: bounds the
/// memory a hostile trace can ask for.
pub const MAX_LIST_LEN: usize = 1 << 20;

/// The first of `names` present in `args`, with the name found.
pub(crate) fn first<'a>(
    args: &'a Map<String, Value>,
    names: &[&'static str],
) -> Option<(&'static str, &'a Value)> {
    names
        .iter()
        .find_map(|name| args.get(*name).map(|value| (*name, value)))
}

/// A count: a whole number ≥ 0 (as a number or a string of digits).
pub(crate) fn count(field: &str, value: &Value) -> Result<u64, String> {
    let bad = || {
        format!(
            "field \"{field}\" is {}, not a whole number of elements ≥ 0",
            shown(value)
        )
    };
    match value {
        Value::Number(n) => match n.as_u64() {
            Some(v) => Ok(v),
            None => match n.as_f64() {
                Some(f) if f >= 0.0 && f.fract() == 0.0 && f < u64::MAX as f64 => Ok(f as u64),
                _ => Err(bad()),
            },
        },
        Value::String(s) => s.trim().parse::<u64>().map_err(|_| bad()),
        _ => Err(bad()),
    }
}

/// A time in microseconds: a finite number ≥ 0.
pub(crate) fn micros(field: &str, value: &Value) -> Result<f64, String> {
    match value.as_f64() {
        Some(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!(
            "field \"{field}\" is {}, not a time ≥ 0",
            shown(value)
        )),
    }
}

/// A list of counts: a JSON array, or the string torch writes of one
/// (`"[0, 1]"`, `"[]"`).
pub(crate) fn count_list(field: &str, value: &Value) -> Result<Vec<u64>, String> {
    let bad = |why: &str| format!("field \"{field}\" is {}: {why}", shown(value));
    let items: Vec<Value> = match value {
        Value::Array(items) => items.clone(),
        Value::String(text) => {
            let inner = text.trim();
            let inner = inner
                .strip_prefix('[')
                .and_then(|s| s.strip_suffix(']'))
                .ok_or_else(|| bad("not a list like [0, 1]"))?;
            if inner.trim().is_empty() {
                Vec::new()
            } else {
                if inner.len() / 2 > MAX_LIST_LEN {
                    return Err(bad(&format!("more than {MAX_LIST_LEN} items")));
                }
                inner
                    .split(',')
                    .map(|item| Value::String(item.trim().to_string()))
                    .collect()
            }
        }
        _ => return Err(bad("not a list")),
    };
    if items.len() > MAX_LIST_LEN {
        return Err(bad(&format!("more than {MAX_LIST_LEN} items")));
    }
    items.iter().map(|item| count(field, item)).collect()
}

/// A rank: a count that fits in 32 bits.
pub(crate) fn rank(field: &str, value: &Value) -> Result<u32, String> {
    let whole = count(field, value)?;
    u32::try_from(whole).map_err(|_| format!("field \"{field}\" is {whole}, not a rank"))
}

/// A value as it appears in a message: short, one line.
pub(crate) fn shown(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 40 {
        format!("{}…", text.chars().take(40).collect::<String>())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_from_numbers_and_strings() {
        assert_eq!(count("n", &json!(12)), Ok(12));
        assert_eq!(count("n", &json!("12")), Ok(12));
        assert_eq!(count("n", &json!(12.0)), Ok(12));
        for bad in [json!(-1), json!(1.5), json!(1e300), json!("x"), json!(null)] {
            let error = count("In msg nelems", &bad).unwrap_err();
            assert!(error.contains("\"In msg nelems\""), "{error}");
        }
    }

    #[test]
    fn lists_from_torch_strings_and_arrays() {
        assert_eq!(count_list("r", &json!("[0, 1]")), Ok(vec![0, 1]));
        assert_eq!(count_list("r", &json!("[]")), Ok(vec![]));
        assert_eq!(count_list("r", &json!([3, 4])), Ok(vec![3, 4]));
        assert!(count_list("r", &json!("0, 1")).is_err());
        assert!(count_list("r", &json!("[0, -1]")).is_err());
        assert!(count_list("r", &json!("[99999999999999999999999]")).is_err());
    }

    #[test]
    fn a_long_value_is_shortened_in_the_message() {
        let error = count("n", &json!("x".repeat(1000))).unwrap_err();
        assert!(error.len() < 120, "{error}");
    }
}
