//! Decodes `--format pprof` output with message definitions of its own (written from
//! `profile.proto`, independently of the renderer's) and prints it in a stable text form for
//! golden files. Decoding checks the references: every location, function and string index
//! must resolve, or it panics.

// Each test crate that includes this module uses only part of it.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::io::Read;

use prost::Message;

#[derive(Clone, PartialEq, Message)]
pub struct Profile {
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    #[prost(int64, tag = "7")]
    pub drop_frames: i64,
    #[prost(int64, tag = "8")]
    pub keep_frames: i64,
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    #[prost(int64, tag = "12")]
    pub period: i64,
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct ValueType {
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Sample {
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Label {
    #[prost(int64, tag = "1")]
    pub key: i64,
    #[prost(int64, tag = "2")]
    pub str: i64,
    #[prost(int64, tag = "3")]
    pub num: i64,
    #[prost(int64, tag = "4")]
    pub num_unit: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Mapping {
    #[prost(uint64, tag = "1")]
    pub id: u64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Location {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    #[prost(uint64, tag = "3")]
    pub address: u64,
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Line {
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    #[prost(int64, tag = "2")]
    pub line: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Function {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(int64, tag = "2")]
    pub name: i64,
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    #[prost(int64, tag = "4")]
    pub filename: i64,
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}

/// Gunzips and decodes.
pub fn decode(gz: &[u8]) -> Profile {
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(gz).read_to_end(&mut bytes).expect("pprof output is gzip");
    Profile::decode(bytes.as_slice()).expect("pprof output is a Profile message")
}

impl Profile {
    pub fn str(&self, index: i64) -> &str {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.string_table.get(i))
            .unwrap_or_else(|| panic!("string index {index} out of {}", self.string_table.len()))
    }

    fn value_type(&self, vt: &ValueType) -> String {
        format!("{}/{}", self.str(vt.r#type), self.str(vt.unit))
    }

    /// The function names of a sample's stack, leaf first, resolving every id.
    pub fn stack(&self, sample: &Sample) -> Vec<String> {
        let locations: std::collections::HashMap<u64, &Location> = self.location.iter().map(|l| (l.id, l)).collect();
        let functions: std::collections::HashMap<u64, &Function> = self.function.iter().map(|f| (f.id, f)).collect();
        sample
            .location_id
            .iter()
            .flat_map(|id| {
                let location = locations.get(id).unwrap_or_else(|| panic!("location {id} is not defined"));
                assert!(!location.line.is_empty(), "location {id} has no line");
                location.line.iter().map(|line| {
                    let f = functions
                        .get(&line.function_id)
                        .unwrap_or_else(|| panic!("function {} is not defined", line.function_id));
                    match line.line {
                        0 => self.str(f.name).to_owned(),
                        n => format!("{}:{n}", self.str(f.name)),
                    }
                })
            })
            .collect()
    }

    /// What `pprof -list NAME` shows: for the function named `name`, (flat, cum) of the first
    /// sample value by source line — flat where the sample's innermost location is on the line,
    /// cum where any location of the function is (once per sample).
    pub fn list(&self, name: &str) -> std::collections::BTreeMap<i64, (i64, i64)> {
        let locations: std::collections::HashMap<u64, &Location> = self.location.iter().map(|l| (l.id, l)).collect();
        let functions: std::collections::HashMap<u64, &Function> = self.function.iter().map(|f| (f.id, f)).collect();
        let mut by_line = std::collections::BTreeMap::new();
        for sample in &self.sample {
            let value = sample.value.first().copied().unwrap_or(0);
            let mut seen = std::collections::BTreeSet::new();
            for (depth, id) in sample.location_id.iter().enumerate() {
                for line in &locations[id].line {
                    if line.line == 0 || self.str(functions[&line.function_id].name) != name {
                        continue;
                    }
                    let entry: &mut (i64, i64) = by_line.entry(line.line).or_default();
                    if depth == 0 {
                        entry.0 += value;
                    }
                    if seen.insert(line.line) {
                        entry.1 += value;
                    }
                }
            }
        }
        by_line
    }
}

/// The whole profile as text, one item per line.
pub fn text(p: &Profile) -> String {
    assert_eq!(p.string_table.first().map(String::as_str), Some(""), "string 0 must be empty");
    let mut out = String::new();
    let types: Vec<String> = p.sample_type.iter().map(|vt| p.value_type(vt)).collect();
    writeln!(out, "sample_type: {} (default {})", types.join(", "), p.str(p.default_sample_type)).unwrap();
    let period_type = p.period_type.as_ref().map_or_else(|| "-".to_owned(), |vt| p.value_type(vt));
    writeln!(out, "period: {} {period_type}", p.period).unwrap();
    writeln!(out, "time_nanos: {} duration_nanos: {}", p.time_nanos, p.duration_nanos).unwrap();
    for &c in &p.comment {
        writeln!(out, "comment: {:?}", p.str(c)).unwrap();
    }
    for s in &p.sample {
        assert_eq!(s.value.len(), p.sample_type.len(), "one value per sample type");
        let labels: Vec<String> = s.label.iter().map(|l| format!("{}={:?}", p.str(l.key), p.str(l.str))).collect();
        writeln!(out, "sample {:?} {}: {}", s.value, labels.join(" "), p.stack(s).join(" <- ")).unwrap();
    }
    for l in &p.location {
        let functions: Vec<String> = l
            .line
            .iter()
            .map(|line| match line.line {
                0 => line.function_id.to_string(),
                n => format!("{}:{n}", line.function_id),
            })
            .collect();
        writeln!(
            out,
            "location {} mapping {} address {} functions [{}]",
            l.id,
            l.mapping_id,
            l.address,
            functions.join(", ")
        )
        .unwrap();
    }
    for f in &p.function {
        writeln!(
            out,
            "function {} name {:?} system_name {:?} filename {:?} start_line {}",
            f.id,
            p.str(f.name),
            p.str(f.system_name),
            p.str(f.filename),
            f.start_line
        )
        .unwrap();
    }
    writeln!(out, "mappings: {} strings: {}", p.mapping.len(), p.string_table.len()).unwrap();
    out
}
