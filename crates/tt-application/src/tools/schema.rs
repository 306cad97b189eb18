//! The one builder of the builtin tools' argument schemas (agent, task, skill and workspace
//! tools) and of their specs: every schema is an object of typed properties whose keys keep the
//! order they are added in, so a spec reads (and snapshots) the same way each time.

use serde_json::{Map, Number, Value, json};
use tt_domain::tool::{AgentToolSpec, ToolAnnotations, ToolName};

/// A builtin tool's spec: its name and alias from `tool`, no output schema, source `builtin`.
pub(crate) fn builtin_spec(
    tool: ToolName,
    title: &str,
    description: String,
    input_schema: Value,
    annotations: ToolAnnotations,
) -> AgentToolSpec {
    AgentToolSpec {
        name: tool.into(),
        model_name: tool.model_alias().to_owned(),
        title: title.to_owned(),
        description,
        input_schema,
        output_schema: None,
        annotations,
        source: "builtin".to_owned(),
        external: None,
    }
}

/// An object schema under construction:
/// `{type: object, properties, required?, additionalProperties, description?}`.
#[derive(Debug, Clone, Default)]
pub(crate) struct ObjectSchema {
    properties: Map<String, Value>,
    required: Vec<String>,
    open: bool,
    description: Option<String>,
}

/// An object schema with no properties yet, closed to extra keys.
pub(crate) fn object() -> ObjectSchema {
    ObjectSchema::default()
}

impl ObjectSchema {
    /// Adds an optional property.
    pub(crate) fn prop(mut self, name: &str, schema: impl Into<Value>) -> Self {
        self.properties.insert(name.to_owned(), schema.into());
        self
    }

    /// Adds a required property (listed in `required` in the order added).
    pub(crate) fn required(mut self, name: &str, schema: impl Into<Value>) -> Self {
        self.required.push(name.to_owned());
        self.prop(name, schema)
    }

    /// Allows keys beyond the listed properties.
    pub(crate) fn open(mut self) -> Self {
        self.open = true;
        self
    }

    /// Describes the object itself (for an object nested as a property).
    pub(crate) fn describe(mut self, description: &str) -> Self {
        self.description = Some(description.to_owned());
        self
    }

    /// The finished schema.
    pub(crate) fn build(self) -> Value {
        let mut schema = Map::new();
        schema.insert("type".to_owned(), json!("object"));
        schema.insert("properties".to_owned(), Value::Object(self.properties));
        if !self.required.is_empty() {
            schema.insert("required".to_owned(), json!(self.required));
        }
        schema.insert("additionalProperties".to_owned(), json!(self.open));
        if let Some(description) = self.description {
            schema.insert("description".to_owned(), json!(description));
        }
        Value::Object(schema)
    }
}

impl From<ObjectSchema> for Value {
    fn from(schema: ObjectSchema) -> Self {
        schema.build()
    }
}

/// A property's schema under construction; keys keep the order of the calls that add them
/// (`type` first).
#[derive(Debug, Clone)]
pub(crate) struct Prop(Map<String, Value>);

/// `{type: string}`.
pub(crate) fn string() -> Prop {
    Prop::of_type("string")
}

/// `{type: integer}`.
pub(crate) fn integer() -> Prop {
    Prop::of_type("integer")
}

/// `{type: boolean}`.
pub(crate) fn boolean() -> Prop {
    Prop::of_type("boolean")
}

/// `{type: object}` with no declared properties.
pub(crate) fn any_object() -> Prop {
    Prop::of_type("object")
}

/// `{type: array, items}`.
pub(crate) fn array(items: impl Into<Value>) -> Prop {
    Prop::of_type("array").with("items", items.into())
}

/// `{type: array, items: {type: string}}`.
pub(crate) fn strings() -> Prop {
    array(string())
}

impl Prop {
    fn of_type(kind: &str) -> Self {
        Self(Map::new()).with("type", json!(kind))
    }

    fn with(mut self, key: &str, value: Value) -> Self {
        self.0.insert(key.to_owned(), value);
        self
    }

    /// `enum`: the only values allowed.
    pub(crate) fn one_of(self, values: &[&str]) -> Self {
        self.with("enum", json!(values))
    }

    /// `minimum`.
    pub(crate) fn min(self, minimum: impl Into<Number>) -> Self {
        self.with("minimum", Value::Number(minimum.into()))
    }

    /// `maximum`.
    pub(crate) fn max(self, maximum: impl Into<Number>) -> Self {
        self.with("maximum", Value::Number(maximum.into()))
    }

    /// `description`.
    pub(crate) fn describe(self, description: impl Into<String>) -> Self {
        self.with("description", Value::String(description.into()))
    }
}

impl From<Prop> for Value {
    fn from(prop: Prop) -> Self {
        Value::Object(prop.0)
    }
}

/// What the spec tests of the agent, skill and workspace tools read out of a spec.
#[cfg(test)]
pub(crate) mod testing {
    use serde_json::Value;
    use tt_domain::tool::{AgentToolSpec, ToolName};

    /// Title, description and every schema description of a spec: all the model reads of it.
    pub(crate) fn spec_texts(spec: &AgentToolSpec) -> Vec<String> {
        fn walk(value: &Value, out: &mut Vec<String>) {
            match value {
                Value::Object(map) => {
                    for (key, inner) in map {
                        match inner {
                            Value::String(text) if key == "description" => out.push(text.clone()),
                            _ => walk(inner, out),
                        }
                    }
                }
                Value::Array(items) => items.iter().for_each(|item| walk(item, out)),
                Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
            }
        }
        let mut texts = vec![spec.title.clone(), spec.description.clone()];
        walk(&spec.input_schema, &mut texts);
        texts
    }

    /// Asserts that `spec_of` answers a spec for exactly the tools in `own`.
    pub(crate) fn assert_specs_only_for(
        spec_of: impl Fn(ToolName) -> Option<AgentToolSpec>,
        own: &[ToolName],
    ) {
        for tool in ToolName::ALL {
            assert_eq!(spec_of(tool).is_some(), own.contains(&tool), "{tool}");
        }
    }

    /// An object schema's property names, in order.
    pub(crate) fn property_names(schema: &Value) -> Vec<&str> {
        schema["properties"]
            .as_object()
            .map(|properties| properties.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }

    /// An object schema's required property names; empty when it has no `required`.
    pub(crate) fn required_names(schema: &Value) -> Vec<&str> {
        schema
            .get("required")
            .and_then(Value::as_array)
            .map(|items| items.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_keys_keep_their_order_and_required_only_when_some() {
        let closed = object().prop("b", string()).prop("a", integer()).build();
        assert_eq!(
            serde_json::to_string(&closed).unwrap(),
            r#"{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}},"additionalProperties":false}"#
        );
        let nested = object()
            .required("x", strings().describe("Xs."))
            .prop("y", integer().min(1).max(5).describe("Ys."))
            .open()
            .describe("Brief.");
        assert_eq!(
            serde_json::to_string(&Value::from(nested)).unwrap(),
            r#"{"type":"object","properties":{"x":{"type":"array","items":{"type":"string"},"description":"Xs."},"y":{"type":"integer","minimum":1,"maximum":5,"description":"Ys."}},"required":["x"],"additionalProperties":true,"description":"Brief."}"#
        );
    }

    #[test]
    fn props_write_their_keys_in_call_order() {
        let prop = Value::from(string().one_of(&["a", "b"]).describe("Pick."));
        assert_eq!(
            serde_json::to_string(&prop).unwrap(),
            r#"{"type":"string","enum":["a","b"],"description":"Pick."}"#
        );
        assert_eq!(Value::from(boolean()), json!({"type": "boolean"}));
        assert_eq!(Value::from(any_object()), json!({"type": "object"}));
    }
}
