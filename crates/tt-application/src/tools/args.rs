//! Strict argument parsing for tools: an object with only known keys, typed getters that turn
//! every mismatch into `tool.invalid_arguments` with a message naming the field.

use serde_json::{Map, Value};

use crate::error::ToolError;

/// A parsed argument object.
#[derive(Debug)]
pub(crate) struct Args<'a> {
    map: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    /// Requires an object whose keys are all in `allowed`.
    pub(crate) fn parse(value: &'a Value, allowed: &[&str]) -> Result<Self, ToolError> {
        let map = value
            .as_object()
            .ok_or_else(|| ToolError::invalid_arguments("arguments must be a JSON object"))?;
        if let Some(unknown) = map.keys().find(|key| !allowed.contains(&key.as_str())) {
            return Err(ToolError::invalid_arguments(format!(
                "unknown argument `{unknown}`; allowed: {}",
                allowed.join(", ")
            )));
        }
        Ok(Self { map })
    }

    fn present(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|value| !value.is_null())
    }

    pub(crate) fn opt_str(&self, key: &str) -> Result<Option<&'a str>, ToolError> {
        match self.present(key) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.as_str())),
            Some(_) => Err(ToolError::invalid_arguments(format!(
                "`{key}` must be a string"
            ))),
        }
    }

    pub(crate) fn req_str(&self, key: &str) -> Result<&'a str, ToolError> {
        self.opt_str(key)?
            .ok_or_else(|| ToolError::invalid_arguments(format!("`{key}` is required")))
    }

    /// Accepts JSON integers (and integral floats such as `2.0`, which some models send).
    pub(crate) fn opt_i64(&self, key: &str) -> Result<Option<i64>, ToolError> {
        match self.present(key) {
            None => Ok(None),
            Some(Value::Number(number)) => {
                if let Some(n) = number.as_i64() {
                    Ok(Some(n))
                } else if let Some(f) = number
                    .as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                {
                    // The bound above keeps the cast exact.
                    #[allow(clippy::cast_possible_truncation)]
                    Ok(Some(f as i64))
                } else {
                    Err(ToolError::invalid_arguments(format!(
                        "`{key}` must be an integer"
                    )))
                }
            }
            Some(_) => Err(ToolError::invalid_arguments(format!(
                "`{key}` must be an integer"
            ))),
        }
    }

    pub(crate) fn opt_bool(&self, key: &str) -> Result<Option<bool>, ToolError> {
        match self.present(key) {
            None => Ok(None),
            Some(Value::Bool(flag)) => Ok(Some(*flag)),
            Some(_) => Err(ToolError::invalid_arguments(format!(
                "`{key}` must be true or false"
            ))),
        }
    }

    pub(crate) fn raw(&self, key: &str) -> Option<&'a Value> {
        self.present(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rejects_unknown_keys_and_wrong_types() {
        let value = json!({"path": "a", "extra": 1});
        assert_eq!(
            Args::parse(&value, &["path"]).unwrap_err().code,
            "tool.invalid_arguments"
        );
        let value = json!({"path": 3});
        let args = Args::parse(&value, &["path"]).unwrap();
        assert!(args.req_str("path").is_err());
        assert!(Args::parse(&json!([1]), &[]).is_err());
    }

    #[test]
    fn integers_accept_integral_floats_and_null_means_absent() {
        let value = json!({"a": 2.0, "b": null, "c": 1.5});
        let args = Args::parse(&value, &["a", "b", "c"]).unwrap();
        assert_eq!(args.opt_i64("a").unwrap(), Some(2));
        assert_eq!(args.opt_i64("b").unwrap(), None);
        assert!(args.opt_i64("c").is_err());
    }
}
