//! systemd unit files as Gardener reads and writes them: coreos/go-systemd
//! v22.7.0 `unit.Deserialize` and `unit.Serialize`, byte for byte.
//!
//! The deserializer is a port of go-systemd's lexer, including its quirks:
//! a value line ending in `\` keeps the backslash and the line break (the
//! ExecStart of gardenlet's kubelet unit is one multi-line value); text
//! before the first section is skipped rune by rune; a backslash followed by
//! `\r\n` does not continue a value; and the 2048-byte line check looks only at what
//! Go's `bufio.Reader` (4096 bytes) happens to hold when a lexing step
//! starts, so the reader's buffer is simulated exactly ([`Buffered`]).
//!
//! The serializer groups options by section in the order sections first
//! appear, one blank line between sections and one newline at the end: the
//! first pass over gardenlet's unit therefore always changes its bytes.

use std::fmt;

/// One `Name=Value` of a section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitOption {
    pub section: String,
    pub name: String,
    pub value: String,
}

impl UnitOption {
    pub fn new(section: &str, name: &str, value: &str) -> Self {
        UnitOption {
            section: section.to_string(),
            name: name.to_string(),
            value: value.to_string(),
        }
    }
}

/// Why a unit cannot be parsed (go-systemd's messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError(pub String);

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// systemd's `LINE_MAX`, the limit go-systemd checks.
const LINE_MAX: usize = 2048;
/// The size of Go's default `bufio.Reader` buffer.
const BUFFER: usize = 4096;
/// `utf8.UTFMax`.
const UTF_MAX: usize = 4;

/// Go's `bufio.Reader` over an in-memory string: the window `[r, w)` of
/// the input that is buffered, and whether the source has reported EOF.
/// Only positions are tracked; the bytes are the input's.
struct Buffered<'a> {
    input: &'a [u8],
    r: usize,
    w: usize,
    eof: bool,
    /// The size of the last rune read, for `UnreadRune`.
    last_rune: Option<usize>,
}

impl<'a> Buffered<'a> {
    fn new(input: &'a str) -> Self {
        Buffered {
            input: input.as_bytes(),
            r: 0,
            w: 0,
            eof: false,
            last_rune: None,
        }
    }

    fn buffered(&self) -> usize {
        self.w - self.r
    }

    /// `bufio.Reader.fill`: slide the window, then read once as much as fits
    /// (a `strings.Reader` returns everything it can, then `0, EOF`).
    fn fill(&mut self) {
        let room = BUFFER - self.buffered();
        let available = self.input.len() - self.w;
        if available == 0 {
            self.eof = true;
        } else {
            self.w += available.min(room);
        }
    }

    /// `ReadRune`: `None` at EOF.
    fn read_rune(&mut self) -> Option<char> {
        while self.r + UTF_MAX > self.w
            && !full_rune(&self.input[self.r..self.w])
            && !self.eof
            && self.buffered() < BUFFER
        {
            self.fill();
        }
        self.last_rune = None;
        if self.r == self.w {
            return None;
        }
        let rest = &self.input[self.r..self.w];
        // The input is a Rust string, so a full rune is always valid UTF-8.
        let (c, size) = decode_rune(rest);
        self.r += size;
        self.last_rune = Some(size);
        Some(c)
    }

    fn unread_rune(&mut self) {
        if let Some(size) = self.last_rune.take() {
            self.r -= size;
        }
    }

    /// `ReadBytes(delim)`: the bytes up to and including `delim`, and whether
    /// the input ended before it.
    fn read_bytes(&mut self, delim: u8) -> (&'a [u8], bool) {
        let start = self.r;
        let mut searched = 0;
        loop {
            if let Some(i) = self.input[self.r + searched..self.w]
                .iter()
                .position(|&b| b == delim)
            {
                self.r += searched + i + 1;
                self.last_rune = None;
                return (&self.input[start..self.r], false);
            }
            if self.eof {
                self.r = self.w;
                self.last_rune = None;
                return (&self.input[start..self.r], true);
            }
            if self.buffered() >= BUFFER {
                // ErrBufferFull: the fragment is kept and the search goes on
                // over a fresh buffer (collectFragments).
                self.r = self.w;
                searched = 0;
                self.fill();
                continue;
            }
            searched = self.w - self.r;
            self.fill();
        }
    }

    /// `Peek(n)` when at least `n` bytes are buffered.
    fn peek(&self, n: usize) -> &'a [u8] {
        &self.input[self.r..self.r + n]
    }
}

/// `utf8.FullRune` for valid UTF-8 prefixes.
fn full_rune(bytes: &[u8]) -> bool {
    match bytes.first() {
        None => false,
        Some(&b) => bytes.len() >= utf8_width(b),
    }
}

fn utf8_width(b: u8) -> usize {
    match b {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

fn decode_rune(bytes: &[u8]) -> (char, usize) {
    let width = utf8_width(bytes[0]).min(bytes.len());
    match std::str::from_utf8(&bytes[..width])
        .ok()
        .and_then(|s| s.chars().next())
    {
        Some(c) => (c, width),
        None => (char::REPLACEMENT_CHARACTER, 1),
    }
}

/// Go's `unicode.IsSpace` (the same set as Rust's `char::is_whitespace`).
fn is_space(c: char) -> bool {
    c.is_whitespace()
}

fn is_comment(c: char) -> bool {
    c == '#' || c == ';'
}

/// `bytes.TrimSpace`.
fn trim_space(b: &[u8]) -> &[u8] {
    match std::str::from_utf8(b) {
        Ok(s) => s.trim().as_bytes(),
        Err(_) => b.trim_ascii(),
    }
}

enum Step {
    NextSection,
    SectionName,
    SectionSuffix(String),
    IgnoreLine(Box<Step>),
    NextSectionOrOption(String),
    OptionName(String),
    OptionValue {
        section: String,
        name: String,
        partial: Vec<u8>,
    },
}

/// go-systemd's `unit.Deserialize`: the options of a unit, in order.
pub fn deserialize(text: &str) -> Result<Vec<UnitOption>, UnitError> {
    let mut buf = Buffered::new(text);
    let mut options = Vec::new();
    let mut step = Some(Step::NextSection);
    while let Some(current) = step {
        if buf.buffered() >= LINE_MAX
            && !buf.peek(LINE_MAX).iter().any(|&b| b == b'\r' || b == b'\n')
        {
            return Err(UnitError(format!("line too long (max {LINE_MAX} bytes)")));
        }
        step = lex(&mut buf, current, &mut options)?;
    }
    Ok(options)
}

/// `toEOL`: the rest of the line without its `\n` (or a last `\r` at the
/// end of the input), and whether the input ended.
fn to_eol<'a>(buf: &mut Buffered<'a>) -> (&'a [u8], bool) {
    let (mut line, eof) = buf.read_bytes(b'\n');
    if let Some(stripped) = line.strip_suffix(b"\r") {
        line = stripped;
    }
    if let Some(stripped) = line.strip_suffix(b"\n") {
        line = stripped;
    }
    (line, eof)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn lex(
    buf: &mut Buffered<'_>,
    step: Step,
    options: &mut Vec<UnitOption>,
) -> Result<Option<Step>, UnitError> {
    Ok(match step {
        Step::NextSection => match buf.read_rune() {
            None => None,
            Some('[') => Some(Step::SectionName),
            Some(c) if is_comment(c) => Some(Step::IgnoreLine(Box::new(Step::NextSection))),
            Some(_) => Some(Step::NextSection),
        },
        Step::SectionName => {
            let (bytes, eof) = buf.read_bytes(b']');
            if eof {
                return Err(UnitError("unable to find end of section".into()));
            }
            Some(Step::SectionSuffix(text(&bytes[..bytes.len() - 1])))
        }
        Step::SectionSuffix(section) => {
            let (garbage, _) = to_eol(buf);
            let garbage = trim_space(garbage);
            if !garbage.is_empty() {
                // go-systemd names l.section, which it never sets.
                return Err(UnitError(format!(
                    "found garbage after section name : {}",
                    go_quote_bytes(garbage)
                )));
            }
            Some(Step::NextSectionOrOption(section))
        }
        Step::IgnoreLine(next) => {
            loop {
                let (line, eof) = to_eol(buf);
                let line = line.strip_suffix(b" ").unwrap_or(line);
                if !line.ends_with(b"\\") || eof {
                    break;
                }
            }
            Some(*next)
        }
        Step::NextSectionOrOption(section) => match buf.read_rune() {
            None => None,
            Some(c) if is_space(c) => Some(Step::NextSectionOrOption(section)),
            Some('[') => Some(Step::SectionName),
            Some(c) if is_comment(c) => Some(Step::IgnoreLine(Box::new(
                Step::NextSectionOrOption(section),
            ))),
            Some(_) => {
                buf.unread_rune();
                Some(Step::OptionName(section))
            }
        },
        Step::OptionName(section) => {
            let mut partial = String::new();
            loop {
                match buf.read_rune() {
                    None => return Err(UnitError("EOF".into())),
                    Some('\n' | '\r') => {
                        return Err(UnitError(
                            "unexpected newline encountered while parsing option name".into(),
                        ));
                    }
                    Some('=') => break,
                    Some(c) => partial.push(c),
                }
            }
            Some(Step::OptionValue {
                section,
                name: partial.trim().to_string(),
                partial: Vec::new(),
            })
        }
        Step::OptionValue {
            section,
            name,
            mut partial,
        } => {
            let (line, eof) = to_eol(buf);
            if !trim_space(line).is_empty() {
                partial.extend_from_slice(line);
                if line.ends_with(b"\\") {
                    if !eof {
                        partial.push(b'\n');
                    }
                    return Ok(Some(Step::OptionValue {
                        section,
                        name,
                        partial,
                    }));
                }
            }
            let val = text(&partial);
            let value = if val.ends_with('\n') {
                format!("{}\n", val.trim())
            } else {
                val.trim().to_string()
            };
            options.push(UnitOption {
                section: section.clone(),
                name,
                value,
            });
            Some(Step::NextSectionOrOption(section))
        }
    })
}

/// Go's `%q` of a byte slice (as go-systemd's garbage message prints it).
fn go_quote_bytes(b: &[u8]) -> String {
    super::quote::go_quote(&String::from_utf8_lossy(b))
}

/// go-systemd's `unit.Serialize`.
pub fn serialize(options: &[UnitOption]) -> String {
    let mut sections: Vec<(&str, Vec<&UnitOption>)> = Vec::new();
    for option in options {
        match sections.iter_mut().find(|(s, _)| *s == option.section) {
            Some((_, list)) => list.push(option),
            None => sections.push((&option.section, vec![option])),
        }
    }
    let mut out = String::new();
    for (i, (section, list)) in sections.iter().enumerate() {
        out.push('[');
        out.push_str(section);
        out.push_str("]\n");
        for option in list {
            out.push_str(&option.name);
            out.push('=');
            out.push_str(&option.value);
            out.push('\n');
        }
        if i + 1 < sections.len() {
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kubelet unit gardenlet writes (reference §1.2, 827 bytes).
    pub const GARDENLET_KUBELET: &str = "[Unit]\nDescription=kubelet daemon\nDocumentation=https://kubernetes.io/docs/admin/kubelet\nAfter=containerd.service\n[Install]\nWantedBy=multi-user.target\n[Service]\nRestart=always\nRestartSec=5\nEnvironment=\"HTTP2_READ_IDLE_TIMEOUT_SECONDS=25\" \"HTTP2_PING_TIMEOUT_SECONDS=12\"\nEnvironmentFile=/etc/environment\nEnvironmentFile=-/var/lib/kubelet/extra_args\nExecStart=/opt/bin/kubelet \\\n    --bootstrap-kubeconfig=/var/lib/kubelet/kubeconfig-bootstrap \\\n    --config=/var/lib/kubelet/config/kubelet \\\n    --kubeconfig=/var/lib/kubelet/kubeconfig-real \\\n    --node-labels=worker.gardener.cloud/kubernetes-version=1.33.3 \\\n    --node-labels=worker.gardener.cloud/pool=worker-a \\\n    --container-runtime-endpoint=unix:///run/containerd/containerd.sock \\\n    --runtime-cgroups=/system.slice/containerd.service \\\n    --v=2 $KUBELET_EXTRA_ARGS";

    #[test]
    fn gardenlets_unit_keeps_its_continuation_lines_in_one_value() {
        assert_eq!(GARDENLET_KUBELET.len(), 827);
        let options = deserialize(GARDENLET_KUBELET).unwrap();
        assert_eq!(options.len(), 10);
        assert_eq!(
            options[0],
            UnitOption::new("Unit", "Description", "kubelet daemon")
        );
        let exec = &options[9];
        assert_eq!(
            (exec.section.as_str(), exec.name.as_str()),
            ("Service", "ExecStart")
        );
        assert!(
            exec.value
                .starts_with("/opt/bin/kubelet \\\n    --bootstrap-kubeconfig=")
        );
        assert!(exec.value.ends_with("--v=2 $KUBELET_EXTRA_ARGS"));
        let out = serialize(&options);
        assert!(out.contains(
            "After=containerd.service\n\n[Install]\nWantedBy=multi-user.target\n\n[Service]\n"
        ));
        assert!(out.ends_with("$KUBELET_EXTRA_ARGS\n"));
        // A second round trip is the identity.
        assert_eq!(serialize(&deserialize(&out).unwrap()), out);
    }

    #[test]
    fn go_systemd_quirks() {
        // Text before the first section is skipped; comments swallow
        // continued lines; empty values; sections without options vanish.
        let options =
            deserialize("junk\n# c \\\nstill comment\n[A]\n[B]\n  X = 1 \nY=\n; z\nZ=a\\\n\n")
                .unwrap();
        assert_eq!(
            options,
            vec![
                UnitOption::new("B", "X", "1"),
                UnitOption::new("B", "Y", ""),
                UnitOption::new("B", "Z", "a\\\n"),
            ]
        );
        assert_eq!(serialize(&options), "[B]\nX=1\nY=\nZ=a\\\n\n");
        assert_eq!(serialize(&[]), "");
        // A CRLF line keeps its \r inside the value.
        let crlf = deserialize("[S]\r\nA=b\r\nC=d").unwrap();
        assert_eq!(crlf[0].value, "b");
        assert_eq!(crlf[0].name, "A");
        let crlf = deserialize("[S]\nA=b\\\r\nC=d\n").unwrap();
        assert_eq!(
            crlf[0].value, "b\\",
            "no continuation: the \\r ends the line"
        );
    }

    #[test]
    fn errors_are_go_systemds() {
        let e = |t: &str| deserialize(t).unwrap_err().to_string();
        assert_eq!(e("[Unit"), "unable to find end of section");
        assert_eq!(e("[Unit] x\n"), "found garbage after section name : \"x\"");
        assert_eq!(e("[Unit]\nName"), "EOF");
        assert_eq!(
            e("[Unit]\nA=b \\\n\n    c\n"),
            "unexpected newline encountered while parsing option name"
        );
        let long = format!("[Unit]\nA={}\n", "x".repeat(3000));
        assert_eq!(e(&long), "line too long (max 2048 bytes)");
        // A long line the buffer does not hold at a step's start passes, as in Go.
        let ok = format!("[Unit]\nA={}\n", "x".repeat(2000));
        assert_eq!(deserialize(&ok).unwrap()[0].value.len(), 2000);
    }
}
