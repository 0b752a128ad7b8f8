//! The recorded AdmissionReviews of tests/fixtures/admission/, each with its
//! shoot context and expected object.

use std::fs;
use std::path::{Path, PathBuf};

use scion::admission::AdmissionRequest;
use serde_json::Value;

pub struct Fixture {
    pub name: String,
    /// The AdmissionReview as recorded.
    pub body: Vec<u8>,
    /// Its request, object decoded whole.
    pub request: AdmissionRequest,
    pub context: Value,
    pub expected: Value,
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

pub fn fixtures() -> Vec<Fixture> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/admission");
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".review.json").map(str::to_string)
        })
        .collect();
    names.sort();
    assert!(names.len() >= 40, "fixtures missing: {}", names.len());
    names
        .into_iter()
        .map(|name| {
            let body = fs::read(dir.join(format!("{name}.review.json"))).unwrap();
            Fixture {
                request: scion::decode::whole(&body).unwrap(),
                body,
                context: read(&dir.join(format!("{name}.context.json"))),
                expected: read(&dir.join(format!("{name}.expected.json"))),
                name,
            }
        })
        .collect()
}

/// The recorded review of that name.
pub fn fixture(name: &str) -> Fixture {
    fixtures()
        .into_iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no fixture {name}"))
}

pub fn mutator_for(f: &Fixture) -> scion::mutation::WebhookMutator {
    let objects: Vec<Value> = f.context["objects"].as_array().unwrap().clone();
    let snap = super::snapshot(super::shoot_from_context(&f.context), &objects);
    super::mutator(f.context["provider"].as_str().unwrap(), snap)
}
