//! JSON Schemas (draft 2020-12) of the documents `locklab` writes, generated
//! from the very types that write them, so a schema cannot drift from the
//! format. `docs/schemas/` holds the committed copies; `locklab schema --out
//! docs/schemas` regenerates them, and a test fails when they are stale.

use crate::format::{CheckReport, Trace};
use schemars::{JsonSchema, generate::SchemaSettings};

/// The schema of `T`, as pretty JSON ending in a newline, with a title.
pub fn generate<T: JsonSchema>(title: &str) -> String {
    let generator = SchemaSettings::draft2020_12().into_generator();
    let schema = generator.into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Some(obj) = value.as_object_mut() {
        obj.insert("title".into(), title.into());
    }
    let mut s = serde_json::to_string_pretty(&value).expect("a schema always serialises");
    s.push('\n');
    s
}

/// A trace file (`check --out-dir`, `simulate --out-dir`, `trace render --format json`).
pub fn trace() -> String {
    generate::<Trace>("locklab trace")
}

/// The report `locklab check --json` writes.
pub fn check_report() -> String {
    generate::<CheckReport>("locklab check report")
}
