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
//!
//! Both are linear in the unit's size, whatever it holds (issue 27): the
//! serializer finds an option's section through an index instead of a scan
//! of the sections so far (200,000 sections took minutes), the lexer looks
//! for the next line break once per line instead of over 2,048 bytes at
//! every step (a long line before the first section was lexed 15 times
//! slower than short ones), and options borrow their text from the unit
//! (three strings per option were twelve times the unit's size; now 56
//! bytes an option). What the options and the serializer's index take is
//! charged to the request's budget ([`crate::budget`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use crate::budget::{Exhausted, Ticker};

/// One `Name=Value` of a section, borrowed from the unit text (the value
/// where it can: a value that continues past a blank line is rebuilt).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitOption<'a> {
    pub section: &'a str,
    pub name: &'a str,
    pub value: Cow<'a, str>,
}

impl<'a> UnitOption<'a> {
    pub fn new(section: &'a str, name: &'a str, value: &'a str) -> Self {
        UnitOption {
            section,
            name,
            value: Cow::Borrowed(value),
        }
    }
}

/// Why a unit cannot be parsed (go-systemd's messages), or why parsing
/// stopped (the request's budget).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnitError {
    Syntax(String),
    Exhausted(Exhausted),
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnitError::Syntax(message) => f.write_str(message),
            UnitError::Exhausted(e) => e.fmt(f),
        }
    }
}

impl From<Exhausted> for UnitError {
    fn from(e: Exhausted) -> Self {
        UnitError::Exhausted(e)
    }
}

fn syntax<T>(message: impl Into<String>) -> Result<T, UnitError> {
    Err(UnitError::Syntax(message.into()))
}

/// What one option costs besides the unit's text: the option (two slices
/// and a value), twice for the vector's doubling, and the serializer's two
/// indices of it.
const OPTION_BYTES: usize = 2 * std::mem::size_of::<UnitOption<'static>>() + 8;
/// What one section header costs the serializer: its index entry and name.
const SECTION_BYTES: usize = 48;

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
    /// The first `\r` or `\n` at or after some position not after `r`
    /// (the input's length if none): the line check's answer until `r`
    /// passes it.
    line_break: usize,
}

impl<'a> Buffered<'a> {
    fn new(input: &'a str) -> Self {
        Buffered {
            input: input.as_bytes(),
            r: 0,
            w: 0,
            eof: false,
            last_rune: None,
            line_break: 0,
        }
    }

    fn buffered(&self) -> usize {
        self.w - self.r
    }

    /// go-systemd's check before each lexing step: the buffer holds at least
    /// `LINE_MAX` bytes and none of the first `LINE_MAX` is a line break.
    fn line_too_long(&mut self) -> bool {
        if self.buffered() < LINE_MAX {
            return false;
        }
        if self.r > self.line_break {
            self.line_break = self.input[self.r..]
                .iter()
                .position(|&b| b == b'\r' || b == b'\n')
                .map_or(self.input.len(), |i| self.r + i);
        }
        self.line_break >= self.r + LINE_MAX
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

    /// `ReadBytes(delim)`: where the bytes up to and including `delim` start
    /// and end, and whether the input ended before it.
    fn read_bytes(&mut self, delim: u8) -> (usize, usize, bool) {
        let start = self.r;
        let mut searched = 0;
        loop {
            if let Some(i) = self.input[self.r + searched..self.w]
                .iter()
                .position(|&b| b == delim)
            {
                self.r += searched + i + 1;
                self.last_rune = None;
                return (start, self.r, false);
            }
            if self.eof {
                self.r = self.w;
                self.last_rune = None;
                return (start, self.r, true);
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

/// `bytes.TrimSpace` of a line of the unit: its text between two positions
/// the lexer stopped at, which are never inside a character.
fn trim_space(text: &str, start: usize, end: usize) -> &str {
    text[start..end].trim()
}

enum Step<'a> {
    NextSection,
    SectionName,
    SectionSuffix(&'a str),
    IgnoreLine(Box<Step<'a>>),
    NextSectionOrOption(&'a str),
    OptionName(&'a str),
    /// The value read so far is `text[start..end]` (go-systemd's `partial`:
    /// a value's lines are always contiguous in the unit).
    OptionValue {
        section: &'a str,
        name: &'a str,
        start: usize,
        end: usize,
    },
}

/// go-systemd's `unit.Deserialize`: the options of a unit, in order.
pub fn deserialize(text: &str) -> Result<Vec<UnitOption<'_>>, UnitError> {
    let mut buf = Buffered::new(text);
    let mut lexer = Lexer {
        text,
        options: Vec::new(),
        ticker: Ticker::new(),
    };
    let mut step = Some(Step::NextSection);
    while let Some(current) = step {
        if buf.line_too_long() {
            return syntax(format!("line too long (max {LINE_MAX} bytes)"));
        }
        lexer.ticker.tick()?;
        step = lexer.lex(&mut buf, current)?;
    }
    lexer.ticker.flush()?;
    Ok(lexer.options)
}

struct Lexer<'a> {
    text: &'a str,
    options: Vec<UnitOption<'a>>,
    ticker: Ticker,
}

/// `toEOL`: where the rest of the line starts and ends without its `\n`
/// (or a last `\r` at the end of the input), and whether the input ended.
fn to_eol(buf: &mut Buffered<'_>) -> (usize, usize, bool) {
    let (start, mut end, eof) = buf.read_bytes(b'\n');
    if buf.input[start..end].ends_with(b"\r") {
        end -= 1;
    }
    if buf.input[start..end].ends_with(b"\n") {
        end -= 1;
    }
    (start, end, eof)
}

impl<'a> Lexer<'a> {
    /// The unit's text between two positions the lexer stopped at, which
    /// are never inside a character (they follow or precede ASCII).
    fn slice(&self, start: usize, end: usize) -> &'a str {
        &self.text[start..end]
    }

    fn lex(
        &mut self,
        buf: &mut Buffered<'a>,
        step: Step<'a>,
    ) -> Result<Option<Step<'a>>, UnitError> {
        Ok(match step {
            Step::NextSection => match buf.read_rune() {
                None => None,
                Some('[') => Some(Step::SectionName),
                Some(c) if is_comment(c) => Some(Step::IgnoreLine(Box::new(Step::NextSection))),
                Some(_) => Some(Step::NextSection),
            },
            Step::SectionName => {
                self.ticker.step(SECTION_BYTES)?;
                let (start, end, eof) = buf.read_bytes(b']');
                if eof {
                    return syntax("unable to find end of section");
                }
                Some(Step::SectionSuffix(self.slice(start, end - 1)))
            }
            Step::SectionSuffix(section) => {
                let (start, end, _) = to_eol(buf);
                let garbage = trim_space(self.text, start, end);
                if !garbage.is_empty() {
                    // go-systemd names l.section, which it never sets.
                    return syntax(format!(
                        "found garbage after section name : {}",
                        go_quote_bytes(garbage.as_bytes())
                    ));
                }
                Some(Step::NextSectionOrOption(section))
            }
            Step::IgnoreLine(next) => {
                loop {
                    let (start, end, eof) = to_eol(buf);
                    let line = &buf.input[start..end];
                    let line = line.strip_suffix(b" ").unwrap_or(line);
                    if !line.ends_with(b"\\") || eof {
                        break;
                    }
                    self.ticker.tick()?;
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
                let start = buf.r;
                loop {
                    match buf.read_rune() {
                        None => return syntax("EOF"),
                        Some('\n' | '\r') => {
                            return syntax(
                                "unexpected newline encountered while parsing option name",
                            );
                        }
                        Some('=') => break,
                        Some(_) => {}
                    }
                }
                let name = self.slice(start, buf.r - 1).trim();
                Some(Step::OptionValue {
                    section,
                    name,
                    start: buf.r,
                    end: buf.r,
                })
            }
            Step::OptionValue {
                section,
                name,
                start,
                mut end,
            } => {
                let (line_start, line_end, eof) = to_eol(buf);
                let line = &buf.input[line_start..line_end];
                if !trim_space(self.text, line_start, line_end).is_empty() {
                    // The value so far ends where this line starts: its
                    // first line right after `=`, a continued one after
                    // the line break the continuation kept.
                    debug_assert_eq!(end, line_start);
                    end = line_end;
                    if line.ends_with(b"\\") {
                        if !eof {
                            end += 1;
                        }
                        return Ok(Some(Step::OptionValue {
                            section,
                            name,
                            start,
                            end,
                        }));
                    }
                }
                let val = self.slice(start, end);
                let value = if val.ends_with('\n') {
                    Cow::Owned(format!("{}\n", val.trim()))
                } else {
                    Cow::Borrowed(val.trim())
                };
                self.ticker.step(OPTION_BYTES)?;
                self.options.push(UnitOption {
                    section,
                    name,
                    value,
                });
                Some(Step::NextSectionOrOption(section))
            }
        })
    }
}

/// Go's `%q` of a byte slice (as go-systemd's garbage message prints it),
/// of at most its first 64 bytes: the message must stay short whatever
/// follows a section name.
fn go_quote_bytes(b: &[u8]) -> String {
    super::quote::excerpt(&String::from_utf8_lossy(b))
}

/// go-systemd's `unit.Serialize`.
pub fn serialize(options: &[UnitOption<'_>]) -> String {
    // Each option's section by first appearance, then the options grouped
    // by it, stably (a counting sort: linear).
    // Options of one section mostly follow each other: the index is asked
    // only when the section changes (a randomly keyed fast hash: the
    // section names are the client's).
    let mut ids: HashMap<&str, u32, foldhash::fast::RandomState> = HashMap::default();
    let mut names: Vec<&str> = Vec::new();
    let mut last: Option<(&str, u32)> = None;
    let section_of: Vec<u32> = options
        .iter()
        .map(|o| match last {
            Some((section, id)) if section == o.section => id,
            _ => {
                let id = *ids.entry(o.section).or_insert_with(|| {
                    names.push(o.section);
                    (names.len() - 1) as u32
                });
                last = Some((o.section, id));
                id
            }
        })
        .collect();
    let mut starts = vec![0u32; names.len() + 1];
    for &s in &section_of {
        starts[s as usize + 1] += 1;
    }
    for i in 1..starts.len() {
        starts[i] += starts[i - 1];
    }
    let mut order = vec![0u32; options.len()];
    let mut next = starts.clone();
    for (i, &s) in section_of.iter().enumerate() {
        order[next[s as usize] as usize] = i as u32;
        next[s as usize] += 1;
    }
    let size: usize = options
        .iter()
        .map(|o| o.name.len() + o.value.len() + 2)
        .sum::<usize>()
        + names.iter().map(|n| n.len() + 4).sum::<usize>();
    let mut out = String::with_capacity(size);
    for (s, section) in names.iter().enumerate() {
        out.push('[');
        out.push_str(section);
        out.push_str("]\n");
        for &i in &order[starts[s] as usize..starts[s + 1] as usize] {
            let option = &options[i as usize];
            out.push_str(option.name);
            out.push('=');
            out.push_str(&option.value);
            out.push('\n');
        }
        if s + 1 < names.len() {
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
        assert_eq!((exec.section, exec.name), ("Service", "ExecStart"));
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
        let garbage = format!("[Unit] {}\n", "x".repeat(2_000));
        assert!(e(&garbage).ends_with("... (2000 bytes)"), "a bounded quote");
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
    /// Issue 27, items 1 and 5: what was quadratic is linear. The counts are
    /// of work (options grouped, bytes scanned for line breaks), not of time.
    #[test]
    fn many_sections_and_long_lines_before_the_first_are_linear() {
        let many: String = (0..50_000).map(|i| format!("[s{i}]\na=b\n")).collect();
        let options = deserialize(&many).unwrap();
        assert_eq!(options.len(), 50_000);
        let out = serialize(&options);
        assert!(out.starts_with("[s0]\na=b\n\n[s1]\na=b\n"));
        assert_eq!(serialize(&deserialize(&out).unwrap()), out);
        // Sections that come back are grouped with their first appearance.
        let mixed = deserialize("[A]\nx=1\n[B]\ny=2\n[A]\nz=3\n").unwrap();
        assert_eq!(serialize(&mixed), "[A]\nx=1\nz=3\n\n[B]\ny=2\n");

        // 2,000-byte lines before the first section, as go-systemd reads
        // them (each under the limit), then a line over it.
        let long = format!(
            "{}\n[S]\nA=b\n",
            format!("{}\n", "y".repeat(2_000)).repeat(200)
        );
        assert_eq!(deserialize(&long).unwrap().len(), 1);
        let over = format!("{}[S]\nA=b\n", "y".repeat(5_000));
        assert_eq!(
            deserialize(&over).unwrap_err().to_string(),
            "line too long (max 2048 bytes)"
        );
    }

    #[test]
    fn options_borrow_the_units_text() {
        let text = "[Service]\nExecStart=/bin/a \\\n  --b\n";
        let options = deserialize(text).unwrap();
        assert!(matches!(options[0].value, Cow::Borrowed(_)));
        assert_eq!(options[0].value, "/bin/a \\\n  --b");
    }

    #[test]
    fn a_budget_stops_the_lexer() {
        let many: String = (0..100_000).map(|i| format!("[s{i}]\na=b\n")).collect();
        let budget = crate::budget::Budget {
            deadline: None,
            memory: 1024 * 1024,
        };
        let err = crate::budget::run(budget, || deserialize(&many).unwrap_err());
        assert!(
            matches!(err, UnitError::Exhausted(Exhausted::Memory { .. })),
            "{err}"
        );
    }
}
