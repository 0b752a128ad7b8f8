//! The Go-compatibility codecs: everything that exists only to read or
//! write bytes exactly as a Go library does, so that what scion writes rolls
//! no node and no pod that the Go extensions would not roll. Below the
//! engine (`mutation/`), the checksums and the providers' cloud configs,
//! which use them; they know nothing of profiles or rules.
//!
//! | file | Go counterpart |
//! |---|---|
//! | `quote.rs` | `strconv.Quote` (`%q`, Helm's `quote`) and `encoding/json`'s string encoding, written once |
//! | `json.rs` | `json.Marshal` of maps (sorted keys, HTML escaping) |
//! | `yaml.rs` | `json.Marshal` + sigs.k8s.io/yaml (go.yaml.in/yaml/v2's emitter) |
//! | `yamltojson.rs` | sigs.k8s.io/yaml `YAMLToJSON`: yaml.v2's reading of YAML (YAML 1.1 scalars, tags, merges), as JSON |
//! | `block.rs` | a fast reader of the block YAML that emitter writes (a fast path; the general parser answers otherwise) |
//! | `kubelet.rs` | the KubeletConfiguration Go struct's decode and encode (fields in `gardener/kubelet.rs`) |
//! | `unit.rs` | coreos/go-systemd v22 `unit.Deserialize` and `unit.Serialize` |
//! | `file.rs` | Gardener's file codec of OperatingSystemConfig files (`""`, `b64`) |

pub mod block;
pub mod file;
pub mod json;
pub mod kubelet;
pub mod quote;
pub mod unit;
pub mod yaml;
pub mod yamltojson;
