//! The generic code names no provider (issue 24 item 1): what scion knows
//! about a cloud is in its folder under `src/providers/`. Every Rust file of
//! `src/` outside that folder is searched for the names of the built-in
//! providers as whole words, case-insensitively, in its code — comments
//! (documentation) and the unit tests at the end of a file
//! (`#[cfg(test)]`, and the `tests.rs`/`proptests.rs` test modules) aside.

use std::path::{Path, PathBuf};

use scion::providers::BUILTIN_PROVIDERS;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Whether `line` holds `name` as a word of its own (letters and digits
/// around it do not count: `awsome`, `gcp2` are no hits).
fn has_word(line: &str, name: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut from = 0;
    while let Some(at) = lower[from..].find(name) {
        let start = from + at;
        let end = start + name.len();
        let before = start == 0 || !bytes[start - 1].is_ascii_alphanumeric();
        let after = end == bytes.len() || !bytes[end].is_ascii_alphanumeric();
        if before && after {
            return true;
        }
        from = end;
    }
    false
}

/// The code of a file: lines before its unit tests, without comment lines
/// and without a trailing `//` comment.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, l)| !l.starts_with("#[cfg(test)]"))
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| {
            let code = match l.find("// ") {
                Some(at) if !l[..at].contains('"') => &l[..at],
                _ => l,
            };
            (i + 1, code)
        })
}

#[test]
fn no_provider_name_in_the_generic_code() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let providers = root.join("src/providers");
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    assert!(files.len() > 100, "{} files", files.len());
    let mut hits = Vec::new();
    for file in files {
        let name = file
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if file.starts_with(&providers) || name == "tests.rs" || name == "proptests.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("read");
        for (line, code) in code_lines(&text) {
            for provider in BUILTIN_PROVIDERS {
                if has_word(code, provider) {
                    hits.push(format!(
                        "{}:{line}: {provider}: {}",
                        file.strip_prefix(&root).unwrap_or(&file).display(),
                        code.trim()
                    ));
                }
            }
        }
    }
    assert!(
        hits.is_empty(),
        "provider names outside src/providers/ (move the knowledge into the provider's folder):\n{}",
        hits.join("\n")
    );
}

#[test]
fn the_search_finds_what_it_looks_for() {
    assert!(has_word("let x = \"aws\";", "aws"));
    assert!(has_word("Provider::Azure =>", "azure"));
    assert!(!has_word("awsome gcp2 xopenstack", "aws"));
    let text = "// aws in a comment\nlet a = 1; // gcp in a comment\nlet b = \"azure\";\n#[cfg(test)]\nmod tests { \"alicloud\" }\n";
    let code: Vec<&str> = code_lines(text).map(|(_, c)| c).collect();
    assert_eq!(code, ["let a = 1; ", "let b = \"azure\";"]);
}
