//! `write_json` against `serde_json::to_string`, on generated values and on every shape serde
//! derives.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value, json};

use super::write_json;

fn ours<T: Serialize + ?Sized>(value: &T) -> Result<String, String> {
    let mut out = String::new();
    write_json(&mut out, value)
        .map(|()| out)
        .map_err(|err| err.to_string())
}

fn theirs<T: Serialize + ?Sized>(value: &T) -> Result<String, String> {
    serde_json::to_string(value).map_err(|err| err.to_string())
}

fn assert_same<T: Serialize + ?Sized + std::fmt::Debug>(value: &T) {
    assert_eq!(ours(value), theirs(value), "{value:?}");
}

/// A small deterministic generator (64-bit LCG), so the cases are the same on every run.
struct Cases(u64);

impl Cases {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn text(&mut self) -> String {
        const PIECES: &[&str] = &[
            "a",
            "word ",
            "\"",
            "\\",
            "\n",
            "\r",
            "\t",
            "\u{0}",
            "\u{1f}",
            "\u{7f}",
            "\u{8}",
            "\u{c}",
            "é",
            "日本",
            "🙂",
            "/",
            "longer plain text without escapes ",
        ];
        let len = match self.below(4) {
            0 => 0,
            1 => self.below(4),
            2 => self.below(20),
            _ => self.below(200),
        };
        (0..len)
            .map(|_| PIECES[self.below(PIECES.len() as u64) as usize])
            .collect()
    }

    fn number(&mut self) -> Number {
        match self.below(5) {
            0 => Number::from(self.next() as i64 - (1 << 30)),
            1 => Number::from(u64::MAX - self.below(3)),
            2 => Number::from(i64::MIN + self.below(3) as i64),
            _ => {
                let float = (self.next() as f64 - 2e9) / (1 + self.below(1_000_000)) as f64;
                Number::from_f64(float * [1.0, 1e-12, 1e30][self.below(3) as usize])
                    .unwrap_or_else(|| Number::from(0))
            }
        }
    }

    fn value(&mut self, depth: u32) -> Value {
        let pick = if depth == 0 {
            self.below(4)
        } else {
            self.below(6)
        };
        match pick {
            0 => Value::Null,
            1 => Value::Bool(self.below(2) == 0),
            2 => Value::Number(self.number()),
            3 => Value::String(self.text()),
            4 => Value::Array((0..self.below(5)).map(|_| self.value(depth - 1)).collect()),
            _ => {
                let mut map = Map::new();
                for _ in 0..self.below(5) {
                    map.insert(self.text(), self.value(depth - 1));
                }
                Value::Object(map)
            }
        }
    }
}

#[test]
fn generated_values_are_written_as_serde_json_writes_them() {
    let mut cases = Cases(47);
    for _ in 0..3_000 {
        assert_same(&cases.value(4));
    }
}

#[derive(Debug, Serialize)]
struct Unit;

#[derive(Debug, Serialize)]
struct Newtype(u8);

#[derive(Debug, Serialize)]
struct Pair(i32, String);

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
enum External {
    Plain,
    Wrapped(String),
    Pair(u8, Option<u8>),
    Fields { a_b: i64, c: Vec<f32> },
}

#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Internal {
    First { x: u32 },
    Second(Inner),
    Empty,
}

#[derive(Debug, Serialize)]
#[serde(tag = "t", content = "c")]
enum Adjacent {
    A(u8),
    B { s: String },
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Untagged {
    Number(f64),
    Text(String),
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Inner {
    some_text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    skipped: Option<u8>,
    kept: Option<u8>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Outer {
    #[serde(flatten)]
    inner: Inner,
    letter: char,
    big: u128,
    small: i128,
    float: f32,
    nan: f64,
    infinite: f32,
    unit: (),
    unit_struct: Unit,
    newtype: Newtype,
    pair: Pair,
    tuple: (bool, &'static str),
    external: Vec<External>,
    internal: Vec<Internal>,
    adjacent: Vec<Adjacent>,
    untagged: Vec<Untagged>,
    int_keys: BTreeMap<i64, bool>,
    bool_keys: BTreeMap<bool, u8>,
    char_keys: BTreeMap<char, u8>,
    #[serde(flatten)]
    extra: HashMap<String, Value>,
    raw: Box<RawValue>,
    raws: Vec<Box<RawValue>>,
}

struct Bytes(&'static [u8]);

impl Serialize for Bytes {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(self.0)
    }
}

#[test]
fn every_derived_shape_is_written_as_serde_json_writes_it() -> Result<(), serde_json::Error> {
    let outer = Outer {
        inner: Inner {
            some_text: "with \"quotes\"\n".to_owned(),
            skipped: None,
            kept: None,
        },
        letter: '\u{1}',
        big: u128::MAX,
        small: i128::MIN,
        float: 0.1,
        nan: f64::NAN,
        infinite: f32::INFINITY,
        unit: (),
        unit_struct: Unit,
        newtype: Newtype(7),
        pair: Pair(-3, "é".to_owned()),
        tuple: (true, "t"),
        external: vec![
            External::Plain,
            External::Wrapped("w".to_owned()),
            External::Pair(1, None),
            External::Fields {
                a_b: -1,
                c: vec![1.5, f32::NAN],
            },
        ],
        internal: vec![
            Internal::First { x: 1 },
            Internal::Second(Inner {
                some_text: String::new(),
                skipped: Some(2),
                kept: Some(3),
            }),
            Internal::Empty,
        ],
        adjacent: vec![Adjacent::A(1), Adjacent::B { s: "\\".to_owned() }],
        untagged: vec![Untagged::Number(1e300), Untagged::Text("x".to_owned())],
        int_keys: BTreeMap::from([(-5, true), (10, false)]),
        bool_keys: BTreeMap::from([(false, 0), (true, 1)]),
        char_keys: BTreeMap::from([('"', 1), ('k', 2)]),
        extra: HashMap::from([("zeta".to_owned(), json!({"n": [1, 2.5, null]}))]),
        raw: RawValue::from_string(r#"{"kept": [1,  2]}"#.to_owned())?,
        raws: vec![RawValue::from_string("\"s\"".to_owned())?],
    };
    assert_same(&outer);
    assert_eq!(ours(&Bytes(b"\x00\xff")), theirs(&Bytes(b"\x00\xff")));
    assert_eq!(ours(&Bytes(b"")), theirs(&Bytes(b"")));
    Ok(())
}

#[test]
fn keys_that_are_not_strings_fail_as_serde_json_fails() {
    assert_same(&BTreeMap::from([(1.5f64.to_bits(), 1)]));
    let struct_keyed = BTreeMap::from([(vec![1u8], 1)]);
    assert_eq!(ours(&struct_keyed), theirs(&struct_keyed));
    assert!(ours(&struct_keyed).is_err());
    let unit_keyed = BTreeMap::from([((), 1)]);
    assert!(ours(&unit_keyed).is_err() && theirs(&unit_keyed).is_err());
}

#[test]
fn floats_as_keys_are_quoted_when_finite() {
    struct FloatKeys(Vec<f64>);
    impl Serialize for FloatKeys {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let mut map = serializer.serialize_map(Some(self.0.len()))?;
            for key in &self.0 {
                map.serialize_entry(key, &true)?;
            }
            map.end()
        }
    }
    let finite = FloatKeys(vec![1.0, -0.5, 1e21]);
    assert_eq!(ours(&finite), theirs(&finite));
    let nan = FloatKeys(vec![f64::NAN]);
    assert_eq!(ours(&nan), theirs(&nan));
}
