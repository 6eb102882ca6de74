//! The policy words of a contract: side effects, risk level, idempotency.
//!
//! Each is a closed set of lowercase words. Parsing an unknown word fails with an error that
//! lists the allowed ones.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A word that is not one of the allowed values of a policy field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: `{found}` is not allowed, use one of: {}", .allowed.join(", "))]
pub struct UnknownWord {
    pub field: &'static str,
    pub found: String,
    pub allowed: &'static [&'static str],
}

/// A closed set of words, parsed with an error that lists them.
pub trait PolicyWord: FromStr<Err = UnknownWord> + Copy {
    /// Every allowed word.
    const WORDS: &'static [&'static str];
}

macro_rules! policy_enum {
    (
        $(#[$meta:meta])*
        $name:ident, field = $field:literal, default = $default:ident,
        { $( $(#[$vmeta:meta])* $variant:ident => $word:literal ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// Every allowed word, in declaration order.
            pub const ALLOWED: &'static [&'static str] = &[$($word),+];
            /// The contract field this value is written in.
            pub const FIELD: &'static str = $field;

            pub fn as_str(self) -> &'static str {
                match self {
                    $( Self::$variant => $word ),+
                }
            }
        }

        impl PolicyWord for $name {
            const WORDS: &'static [&'static str] = Self::ALLOWED;
        }

        impl Default for $name {
            fn default() -> Self {
                Self::$default
            }
        }

        impl FromStr for $name {
            type Err = UnknownWord;
            fn from_str(s: &str) -> Result<Self, UnknownWord> {
                match s {
                    $( $word => Ok(Self::$variant), )+
                    _ => Err(UnknownWord { field: $field, found: s.to_owned(), allowed: Self::ALLOWED }),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({"type": "string", "enum": Self::ALLOWED})
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let word = String::deserialize(deserializer)?;
                word.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

policy_enum! {
    /// What a skill does in the outside world.
    SideEffects, field = "sideEffects", default = None,
    {
        /// Computes only.
        None => "none",
        /// Reads an external system.
        ExternalRead => "external_read",
        /// Acts on an external system on behalf of the organisation; needs a basis to run.
        ExternalWrite => "external_write",
    }
}

policy_enum! {
    /// How much harm a wrong call can do.
    RiskLevel, field = "riskLevel", default = Low,
    { Low => "low", Medium => "medium", High => "high" }
}

policy_enum! {
    /// Whether a repeated call with the same idempotency key is safe.
    Idempotency, field = "idempotency", default = None,
    {
        /// A key is mandatory on every call.
        Required => "required",
        /// Repeating the call is harmless by nature.
        Natural => "natural",
        /// No guarantee.
        None => "none",
    }
}

impl SideEffects {
    /// Whether a skill with these side effects can write to the outside world.
    pub fn writes(self) -> bool {
        self == Self::ExternalWrite
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip() {
        for word in SideEffects::ALLOWED {
            let value: SideEffects = word.parse().expect("allowed");
            assert_eq!(value.as_str(), *word);
        }
        for word in RiskLevel::ALLOWED {
            assert_eq!(word.parse::<RiskLevel>().expect("allowed").to_string(), *word);
        }
        for word in Idempotency::ALLOWED {
            assert_eq!(word.parse::<Idempotency>().expect("allowed").to_string(), *word);
        }
    }

    #[test]
    fn unknown_word_lists_allowed_values() {
        let error = "writes".parse::<SideEffects>().expect_err("unknown");
        assert_eq!(
            error.to_string(),
            "sideEffects: `writes` is not allowed, use one of: none, external_read, external_write"
        );
        assert!(RiskLevel::High > RiskLevel::Low);
    }
}
