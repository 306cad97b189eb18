//! What model calls cost: a price per million tokens for input, output, cached input and
//! cache writes, per model id, and the cost of one call's usage.
//!
//! A connection file may name prices per model id (`prices`); otherwise the defaults below
//! apply to the model ids they know (list prices in US dollars as published by the providers
//! when this table was written; docs/providers.md, "Cost", lists them). A model with no price
//! has no cost: it is shown as unknown, never as free.

use serde::{Deserialize, Serialize};

use crate::model::ModelUsage;

/// US dollars per million tokens.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelPrice {
    /// Input tokens neither read from nor written to a prompt cache.
    pub input: f64,
    pub output: f64,
    /// Input tokens read from the provider's prompt cache; unset: the input price.
    pub cached_input: Option<f64>,
    /// Input tokens written to the provider's prompt cache; unset: the input price.
    pub cache_write: Option<f64>,
}

impl ModelPrice {
    const fn new(input: f64, output: f64, cached_input: f64, cache_write: Option<f64>) -> Self {
        Self {
            input,
            output,
            cached_input: Some(cached_input),
            cache_write,
        }
    }

    /// The cost of `usage` in US dollars. `input_tokens` counts the whole prompt, cached and
    /// cache-written parts included (`ModelUsage`), so the plain part is what remains.
    pub fn cost_usd(&self, usage: &ModelUsage) -> f64 {
        let cached = usage.cached_input_tokens.min(usage.input_tokens);
        let written = usage
            .cache_write_tokens
            .min(usage.input_tokens.saturating_sub(cached));
        let plain = usage.input_tokens - cached - written;
        let per_token = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        per_token(plain, self.input)
            + per_token(cached, self.cached_input.unwrap_or(self.input))
            + per_token(written, self.cache_write.unwrap_or(self.input))
            + per_token(usage.output_tokens, self.output)
    }

    /// Whether every price is a finite number ≥ 0 (a connection file is checked with it).
    pub fn is_valid(&self) -> bool {
        [
            Some(self.input),
            Some(self.output),
            self.cached_input,
            self.cache_write,
        ]
        .into_iter()
        .flatten()
        .all(|price| price.is_finite() && price >= 0.0)
    }
}

/// Default prices by model-id prefix; the longest matching prefix wins.
const DEFAULT_PRICES: &[(&str, ModelPrice)] = &[
    (
        "claude-opus-4-5",
        ModelPrice::new(5.0, 25.0, 0.5, Some(6.25)),
    ),
    (
        "claude-opus-4",
        ModelPrice::new(15.0, 75.0, 1.5, Some(18.75)),
    ),
    (
        "claude-sonnet-4",
        ModelPrice::new(3.0, 15.0, 0.3, Some(3.75)),
    ),
    (
        "claude-3-7-sonnet",
        ModelPrice::new(3.0, 15.0, 0.3, Some(3.75)),
    ),
    (
        "claude-haiku-4-5",
        ModelPrice::new(1.0, 5.0, 0.1, Some(1.25)),
    ),
    (
        "claude-3-5-haiku",
        ModelPrice::new(0.8, 4.0, 0.08, Some(1.0)),
    ),
    ("gpt-4o-mini", ModelPrice::new(0.15, 0.6, 0.075, None)),
    ("gpt-4o", ModelPrice::new(2.5, 10.0, 1.25, None)),
    ("gpt-4.1-nano", ModelPrice::new(0.1, 0.4, 0.025, None)),
    ("gpt-4.1-mini", ModelPrice::new(0.4, 1.6, 0.1, None)),
    ("gpt-4.1", ModelPrice::new(2.0, 8.0, 0.5, None)),
    ("gpt-5-nano", ModelPrice::new(0.05, 0.4, 0.005, None)),
    ("gpt-5-mini", ModelPrice::new(0.25, 2.0, 0.025, None)),
    ("gpt-5", ModelPrice::new(1.25, 10.0, 0.125, None)),
    ("o3", ModelPrice::new(2.0, 8.0, 0.5, None)),
    ("o4-mini", ModelPrice::new(1.1, 4.4, 0.275, None)),
    ("deepseek-chat", ModelPrice::new(0.28, 0.42, 0.028, None)),
    (
        "deepseek-reasoner",
        ModelPrice::new(0.28, 0.42, 0.028, None),
    ),
];

/// The default price of `model_id`, when the table knows it.
pub fn default_price(model_id: &str) -> Option<ModelPrice> {
    crate::context_window::by_model_prefix(DEFAULT_PRICES, model_id).copied()
}

/// A connection's prices by model id (`"*"` for any model of the connection).
pub type PriceTable = std::collections::BTreeMap<String, ModelPrice>;

/// The price of `model_id` on a connection with `table`: its own entry, the table's `"*"`,
/// then the default for the model id.
pub fn price_for(table: &PriceTable, model_id: Option<&str>) -> Option<ModelPrice> {
    model_id
        .and_then(|id| table.get(id))
        .or_else(|| table.get("*"))
        .copied()
        .or_else(|| model_id.and_then(default_price))
}

/// An amount of US dollars, kept in millionths so budgets compare exactly; written in JSON as
/// a number of dollars (`0.25`). A negative, non-finite or too large number is refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Usd {
    micro: u64,
}

impl Usd {
    pub const ZERO: Usd = Usd { micro: 0 };

    pub fn from_micro(micro: u64) -> Self {
        Self { micro }
    }

    /// `dollars`, rounded to a millionth; `None` when negative or not a finite number.
    pub fn from_dollars(dollars: f64) -> Option<Self> {
        (dollars.is_finite() && (0.0..1e12).contains(&dollars)).then(|| Self {
            micro: (dollars * 1_000_000.0).round() as u64,
        })
    }

    pub fn micro(self) -> u64 {
        self.micro
    }

    pub fn dollars(self) -> f64 {
        self.micro as f64 / 1_000_000.0
    }

    pub fn saturating_add(self, other: Usd) -> Usd {
        Usd::from_micro(self.micro.saturating_add(other.micro))
    }
}

impl std::fmt::Display for Usd {
    /// `$0.0123` (four decimals; more when the amount is below a hundredth of a cent).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.micro > 0 && self.micro < 100 {
            write!(f, "${:.6}", self.dollars())
        } else {
            write!(f, "${:.4}", self.dollars())
        }
    }
}

impl Serialize for Usd {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.dollars())
    }
}

impl<'de> Deserialize<'de> for Usd {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let dollars = f64::deserialize(deserializer)?;
        Usd::from_dollars(dollars).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "{dollars} is not an amount of dollars (a number >= 0)"
            ))
        })
    }
}

/// `usd` rounded to a millionth of a dollar, as events and reports carry it.
pub fn round_usd(usd: f64) -> f64 {
    (usd * 1_000_000.0).round() / 1_000_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_and_written_input_are_priced_apart() {
        let price = default_price("claude-sonnet-4-5").unwrap_or_else(|| unreachable!());
        let usage = ModelUsage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cached_input_tokens: 600_000,
            cache_write_tokens: 100_000,
        };
        // 300k plain at 3, 600k cached at 0.3, 100k written at 3.75, 100k out at 15.
        let cost = round_usd(price.cost_usd(&usage));
        assert!((cost - (0.9 + 0.18 + 0.375 + 1.5)).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn the_longest_prefix_wins_and_unknown_models_have_no_price() {
        assert_eq!(
            default_price("gpt-4o-mini-2024").map(|p| p.input),
            Some(0.15)
        );
        assert_eq!(default_price("openai/gpt-4o").map(|p| p.input), Some(2.5));
        assert!(default_price("local").is_none());
    }

    #[test]
    fn dollars_round_trip_in_millionths_and_refuse_what_is_not_an_amount() {
        let usd: Usd = serde_json::from_str("0.25").unwrap_or_default();
        assert_eq!(usd.micro(), 250_000);
        assert_eq!(serde_json::to_string(&usd).ok().as_deref(), Some("0.25"));
        assert_eq!(usd.to_string(), "$0.2500");
        assert_eq!(Usd::from_micro(12).to_string(), "$0.000012");
        assert!(serde_json::from_str::<Usd>("-1").is_err());
        assert!(Usd::from_dollars(f64::NAN).is_none());
    }

    #[test]
    fn figures_beyond_the_prompt_are_clamped() {
        let price = ModelPrice::new(1.0, 1.0, 0.0, None);
        let usage = ModelUsage {
            input_tokens: 10,
            output_tokens: 0,
            cached_input_tokens: 50,
            cache_write_tokens: 50,
        };
        assert_eq!(price.cost_usd(&usage), 0.0);
        assert!(!ModelPrice::new(-1.0, 1.0, 0.0, None).is_valid());
    }
}
