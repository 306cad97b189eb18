//! A map key written as a JSON string: strings, chars, unit variants, booleans and numbers (the
//! last two quoted), as `serde_json` accepts them; anything else is the error `serde_json`
//! gives.

use serde::ser::{Error as _, Impossible, Serialize, Serializer};
use serde_json::Error;

use super::sink::{JsonSink, put_quoted};

/// Writes one map key into its sink.
pub(crate) struct KeyWriter<'s, S: ?Sized> {
    pub(crate) sink: &'s mut S,
}

fn key_must_be_a_string() -> Error {
    Error::custom("key must be a string")
}

impl<S: JsonSink + ?Sized> KeyWriter<'_, S> {
    /// `text` between quotes, as it is: only digits, signs, dots, letters of `true`, `false`
    /// and exponents come here.
    fn quoted_plain(self, text: &str) -> Result<(), Error> {
        self.sink.put_ascii(b'"');
        self.sink.put(text);
        self.sink.put_ascii(b'"');
        Ok(())
    }

    fn integer(self, value: impl itoa::Integer) -> Result<(), Error> {
        self.quoted_plain(itoa::Buffer::new().format(value))
    }
}

macro_rules! integer_keys {
    ($($method:ident($ty:ty)),* $(,)?) => {
        $(fn $method(self, value: $ty) -> Result<(), Error> {
            self.integer(value)
        })*
    };
}

macro_rules! rejected_keys {
    ($($method:ident($($arg:ty),*)),* $(,)?) => {
        $(fn $method(self, $(_: $arg),*) -> Result<(), Error> {
            Err(key_must_be_a_string())
        })*
    };
}

impl<S: JsonSink + ?Sized> Serializer for KeyWriter<'_, S> {
    integer_keys!(
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_i128(i128),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_u128(u128),
    );

    rejected_keys!(
        serialize_bytes(&[u8]),
        serialize_unit(),
        serialize_none(),
        serialize_unit_struct(&'static str)
    );

    fn serialize_str(self, value: &str) -> Result<(), Error> {
        put_quoted(self.sink, value);
        Ok(())
    }

    fn serialize_char(self, value: char) -> Result<(), Error> {
        self.serialize_str(value.encode_utf8(&mut [0u8; 4]))
    }

    fn serialize_bool(self, value: bool) -> Result<(), Error> {
        self.quoted_plain(if value { "true" } else { "false" })
    }

    fn serialize_f32(self, value: f32) -> Result<(), Error> {
        if !value.is_finite() {
            return Err(float_key_must_be_finite());
        }
        self.quoted_plain(zmij::Buffer::new().format_finite(value))
    }

    fn serialize_f64(self, value: f64) -> Result<(), Error> {
        if !value.is_finite() {
            return Err(float_key_must_be_finite());
        }
        self.quoted_plain(zmij::Buffer::new().format_finite(value))
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }

    refuse_compounds!(key_must_be_a_string());
}

fn float_key_must_be_finite() -> Error {
    Error::custom("float key must be finite (got NaN or +/-inf)")
}
