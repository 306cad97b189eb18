//! The text of a `serde_json::value::RawValue`, copied in as it is: `RawValue` serializes
//! itself as a struct with one string field under a name only `serde_json` knows, and its
//! serializer writes that string unquoted.

use serde::ser::{Error as _, Impossible, Serialize, Serializer};
use serde_json::Error;

use super::sink::JsonSink;

/// The struct name `serde_json::value::RawValue` serializes itself under.
pub(crate) const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// Takes a raw value's one string field and writes it unquoted.
pub(crate) struct RawWriter<'s, S: ?Sized> {
    pub(crate) sink: &'s mut S,
}

fn not_raw_json() -> Error {
    Error::custom("a raw JSON value must be given as its text")
}

macro_rules! rejected {
    ($($method:ident($($arg:ty),*)),* $(,)?) => {
        $(fn $method(self, $(_: $arg),*) -> Result<(), Error> {
            Err(not_raw_json())
        })*
    };
}

impl<S: JsonSink + ?Sized> Serializer for RawWriter<'_, S> {
    rejected!(
        serialize_bool(bool),
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
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_bytes(&[u8]),
        serialize_unit(),
        serialize_none(),
        serialize_unit_struct(&'static str),
        serialize_unit_variant(&'static str, u32, &'static str),
    );

    fn serialize_str(self, value: &str) -> Result<(), Error> {
        self.sink.put(value);
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<(), Error> {
        Err(not_raw_json())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _value: &T,
    ) -> Result<(), Error> {
        Err(not_raw_json())
    }

    refuse_compounds!(not_raw_json());
}
