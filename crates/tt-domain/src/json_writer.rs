//! Compact JSON text, byte for byte as `serde_json`'s compact serializer writes it (the same
//! numbers through `itoa` and `zmij`, the same escapes, `RawValue`s copied in), but with
//! strings scanned for escapes eight bytes at a time and text appended to a `String` without a
//! UTF-8 check. Every event, record and document the runtime stores goes through here: in a
//! profile of the fan-out, `serde_json`'s byte-by-byte escaping was a sixth of all
//! instructions.
//!
//! Parsing stays with `serde_json`; `tests` checks the two agree on every kind of value.

/// The associated types and methods of a `Serializer` that refuses every compound value (and variants with
/// content) with `$refusal`: what a map key and a raw value's text share.
macro_rules! refuse_compounds {
    ($refusal:expr) => {
        type Ok = ();
        type Error = Error;
        type SerializeSeq = Impossible<(), Error>;
        type SerializeTuple = Impossible<(), Error>;
        type SerializeTupleStruct = Impossible<(), Error>;
        type SerializeTupleVariant = Impossible<(), Error>;
        type SerializeMap = Impossible<(), Error>;
        type SerializeStruct = Impossible<(), Error>;
        type SerializeStructVariant = Impossible<(), Error>;

        fn serialize_newtype_variant<T: Serialize + ?Sized>(
            self,
            _name: &'static str,
            _index: u32,
            _variant: &'static str,
            _value: &T,
        ) -> Result<(), Error> {
            Err($refusal)
        }

        fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, Error> {
            Err($refusal)
        }

        fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, Error> {
            Err($refusal)
        }

        fn serialize_tuple_struct(
            self,
            _name: &'static str,
            _len: usize,
        ) -> Result<Self::SerializeTupleStruct, Error> {
            Err($refusal)
        }

        fn serialize_tuple_variant(
            self,
            _name: &'static str,
            _index: u32,
            _variant: &'static str,
            _len: usize,
        ) -> Result<Self::SerializeTupleVariant, Error> {
            Err($refusal)
        }

        fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, Error> {
            Err($refusal)
        }

        fn serialize_struct(
            self,
            _name: &'static str,
            _len: usize,
        ) -> Result<Self::SerializeStruct, Error> {
            Err($refusal)
        }

        fn serialize_struct_variant(
            self,
            _name: &'static str,
            _index: u32,
            _variant: &'static str,
            _len: usize,
        ) -> Result<Self::SerializeStructVariant, Error> {
            Err($refusal)
        }
    };
}

mod key;
mod raw;
mod sink;

use serde::Serialize;
use serde::ser::{
    Error as _, SerializeMap, SerializeSeq, SerializeStruct, SerializeStructVariant,
    SerializeTuple, SerializeTupleStruct, SerializeTupleVariant, Serializer,
};
use serde_json::Error;

use key::KeyWriter;
use raw::{RAW_VALUE_TOKEN, RawWriter};
pub use sink::JsonSink;
use sink::{put_key, put_quoted};

/// Appends `value` to `sink` as compact JSON text, exactly as `serde_json::to_writer` writes
/// it, and fails where it fails (a map key that is not a string, a failing `Serialize`). On a
/// failure the sink may hold part of the text.
pub fn write_json<S, T>(sink: &mut S, value: &T) -> Result<(), Error>
where
    S: JsonSink + ?Sized,
    T: Serialize + ?Sized,
{
    value.serialize(&mut JsonWriter { sink })
}

/// The serializer behind [`write_json`].
struct JsonWriter<'s, S: ?Sized> {
    sink: &'s mut S,
}

impl<'s, S: JsonSink + ?Sized> JsonWriter<'s, S> {
    #[inline]
    fn put(&mut self, text: &str) -> Result<(), Error> {
        self.sink.put(text);
        Ok(())
    }

    fn integer(&mut self, value: impl itoa::Integer) -> Result<(), Error> {
        self.put(itoa::Buffer::new().format(value))
    }

    /// `{"variant":`, the opening of an externally tagged variant with content.
    fn open_variant(&mut self, variant: &str) {
        self.sink.put_ascii(b'{');
        put_quoted(self.sink, variant);
        self.sink.put_ascii(b':');
    }

    fn items(&mut self, open: u8, close: &'static str) -> Compound<'_, 's, S> {
        self.sink.put_ascii(open);
        Compound::Items {
            writer: self,
            first: true,
            close,
        }
    }
}

/// A sequence, map, struct or variant being written, or a `RawValue` whose text comes next.
enum Compound<'w, 's, S: ?Sized> {
    Items {
        writer: &'w mut JsonWriter<'s, S>,
        first: bool,
        /// Written at the end: `]`, `}`, or two of them for a variant's content.
        close: &'static str,
    },
    Raw {
        writer: &'w mut JsonWriter<'s, S>,
    },
}

impl<'w, 's, S: JsonSink + ?Sized> Compound<'w, 's, S> {
    /// The writer, after the separator the next item needs.
    fn next_item(&mut self) -> &mut JsonWriter<'s, S> {
        match self {
            Compound::Items { writer, first, .. } => {
                if !*first {
                    writer.sink.put_ascii(b',');
                }
                *first = false;
                writer
            }
            Compound::Raw { writer } => writer,
        }
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        value.serialize(self.next_item())
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        if let Compound::Raw { writer } = self {
            return if key == RAW_VALUE_TOKEN {
                value.serialize(RawWriter {
                    sink: &mut *writer.sink,
                })
            } else {
                Err(Error::custom("a raw JSON value has one field"))
            };
        }
        let writer = self.next_item();
        put_key(writer.sink, key);
        value.serialize(writer)
    }

    fn close(self) -> Result<(), Error> {
        if let Compound::Items { writer, close, .. } = self {
            writer.sink.put(close);
        }
        Ok(())
    }
}

impl<'w, 's, S: JsonSink + ?Sized> Serializer for &'w mut JsonWriter<'s, S> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'w, 's, S>;
    type SerializeTuple = Compound<'w, 's, S>;
    type SerializeTupleStruct = Compound<'w, 's, S>;
    type SerializeTupleVariant = Compound<'w, 's, S>;
    type SerializeMap = Compound<'w, 's, S>;
    type SerializeStruct = Compound<'w, 's, S>;
    type SerializeStructVariant = Compound<'w, 's, S>;

    fn serialize_bool(self, value: bool) -> Result<(), Error> {
        self.put(if value { "true" } else { "false" })
    }

    fn serialize_i8(self, value: i8) -> Result<(), Error> {
        self.integer(value)
    }

    fn serialize_i16(self, value: i16) -> Result<(), Error> {
        self.integer(value)
    }

    fn serialize_i32(self, value: i32) -> Result<(), Error> {
        self.integer(value)
    }

    fn serialize_i64(self, value: i64) -> Result<(), Error> {
        self.integer(value)
    }

    fn serialize_i128(self, value: i128) -> Result<(), Error> {
        self.integer(value)
    }

    fn serialize_u8(self, value: u8) -> Result<(), Error> {
        self.integer(value)
    }

    fn serialize_u16(self, value: u16) -> Result<(), Error> {
        self.integer(value)
    }

    fn serialize_u32(self, value: u32) -> Result<(), Error> {
        self.integer(value)
    }

    fn serialize_u64(self, value: u64) -> Result<(), Error> {
        self.integer(value)
    }

    fn serialize_u128(self, value: u128) -> Result<(), Error> {
        self.integer(value)
    }

    fn serialize_f32(self, value: f32) -> Result<(), Error> {
        if value.is_finite() {
            self.put(zmij::Buffer::new().format_finite(value))
        } else {
            self.put("null")
        }
    }

    fn serialize_f64(self, value: f64) -> Result<(), Error> {
        if value.is_finite() {
            self.put(zmij::Buffer::new().format_finite(value))
        } else {
            self.put("null")
        }
    }

    fn serialize_char(self, value: char) -> Result<(), Error> {
        self.serialize_str(value.encode_utf8(&mut [0u8; 4]))
    }

    fn serialize_str(self, value: &str) -> Result<(), Error> {
        put_quoted(self.sink, value);
        Ok(())
    }

    fn serialize_bytes(self, value: &[u8]) -> Result<(), Error> {
        let mut seq = self.items(b'[', "]");
        for byte in value {
            seq.element(byte)?;
        }
        seq.close()
    }

    fn serialize_none(self) -> Result<(), Error> {
        self.put("null")
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Error> {
        self.put("null")
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        self.put("null")
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

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.open_variant(variant);
        value.serialize(&mut *self)?;
        self.sink.put_ascii(b'}');
        Ok(())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Ok(self.items(b'[', "]"))
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, Error> {
        Ok(self.items(b'[', "]"))
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Ok(self.items(b'[', "]"))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        self.open_variant(variant);
        Ok(self.items(b'[', "]}"))
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Ok(self.items(b'{', "}"))
    }

    fn serialize_struct(
        self,
        name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, Error> {
        if name == RAW_VALUE_TOKEN {
            return Ok(Compound::Raw { writer: self });
        }
        Ok(self.items(b'{', "}"))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        self.open_variant(variant);
        Ok(self.items(b'{', "}}"))
    }
}

/// The four sequence kinds, each item written by [`Compound::element`].
macro_rules! sequence_impls {
    ($($kind:ident::$method:ident),*) => {$(
        impl<S: JsonSink + ?Sized> $kind for Compound<'_, '_, S> {
            type Ok = ();
            type Error = Error;

            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
                self.element(value)
            }

            fn end(self) -> Result<(), Error> {
                self.close()
            }
        }
    )*};
}

sequence_impls!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl<S: JsonSink + ?Sized> SerializeMap for Compound<'_, '_, S> {
    type Ok = ();
    type Error = Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        let writer = self.next_item();
        key.serialize(KeyWriter {
            sink: &mut *writer.sink,
        })
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let writer = match self {
            Compound::Items { writer, .. } | Compound::Raw { writer } => writer,
        };
        writer.sink.put_ascii(b':');
        value.serialize(&mut **writer)
    }

    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

/// Structs and struct variants, each field written by [`Compound::field`].
macro_rules! struct_impls {
    ($($kind:ident),*) => {$(
        impl<S: JsonSink + ?Sized> $kind for Compound<'_, '_, S> {
            type Ok = ();
            type Error = Error;

            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), Error> {
                self.field(key, value)
            }

            fn end(self) -> Result<(), Error> {
                self.close()
            }
        }
    )*};
}

struct_impls!(SerializeStruct, SerializeStructVariant);

#[cfg(test)]
mod tests;
