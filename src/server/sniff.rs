//! A read-side observer of HTTP/2 framing: it tells whether the connection
//! speaks HTTP/2 and when a header block is open (a HEADERS frame without
//! END_HEADERS, until the CONTINUATION that ends it).
//!
//! hyper has no header deadline for HTTP/2 and an incomplete header block
//! never reaches the service, so the connection watchdog learns about it
//! here. Only the 9-byte frame headers are looked at; payloads are skipped
//! by length, so the cost is a few comparisons per frame.

/// The HTTP/2 client connection preface (RFC 9113 §3.4).
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const FRAME_HEADER_LEN: usize = 9;
const TYPE_HEADERS: u8 = 0x1;
const TYPE_CONTINUATION: u8 = 0x9;
const FLAG_END_HEADERS: u8 = 0x4;

/// What a chunk of received bytes changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// A header block started and has not ended yet.
    HeaderBlockOpened,
    /// The open header block ended (CONTINUATION with END_HEADERS).
    HeaderBlockClosed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Matching the preface; `matched` bytes so far.
    Preface { matched: usize },
    /// Inside the frame stream: `have` bytes of the next frame header
    /// collected, or `skip` payload bytes still to pass over.
    Frames {
        head: [u8; FRAME_HEADER_LEN],
        have: usize,
        skip: usize,
    },
    /// Not HTTP/2 (or a framing error hyper will answer): nothing to observe.
    Off,
}

/// Feed it every received byte, in order.
#[derive(Debug, Clone)]
pub(crate) struct H2Sniffer {
    state: State,
    block_open: bool,
}

impl Default for H2Sniffer {
    fn default() -> Self {
        H2Sniffer {
            state: State::Preface { matched: 0 },
            block_open: false,
        }
    }
}

impl H2Sniffer {
    /// Observe `bytes`; returns the last header-block change they caused,
    /// if any (within one read a block may open and close again, which is
    /// reported as the final state).
    pub(crate) fn feed(&mut self, mut bytes: &[u8]) -> Option<Event> {
        let was_open = self.block_open;
        while !bytes.is_empty() {
            match &mut self.state {
                State::Off => break,
                State::Preface { matched } => {
                    let want = &PREFACE[*matched..];
                    let n = want.len().min(bytes.len());
                    if bytes[..n] != want[..n] {
                        self.state = State::Off;
                        break;
                    }
                    *matched += n;
                    bytes = &bytes[n..];
                    if *matched == PREFACE.len() {
                        self.state = State::Frames {
                            head: [0; FRAME_HEADER_LEN],
                            have: 0,
                            skip: 0,
                        };
                    }
                }
                State::Frames { head, have, skip } => {
                    if *skip > 0 {
                        let n = (*skip).min(bytes.len());
                        *skip -= n;
                        bytes = &bytes[n..];
                        continue;
                    }
                    let n = (FRAME_HEADER_LEN - *have).min(bytes.len());
                    head[*have..*have + n].copy_from_slice(&bytes[..n]);
                    *have += n;
                    bytes = &bytes[n..];
                    if *have < FRAME_HEADER_LEN {
                        continue;
                    }
                    let length = usize::from(head[0]) << 16
                        | usize::from(head[1]) << 8
                        | usize::from(head[2]);
                    let (kind, flags) = (head[3], head[4]);
                    let ends = flags & FLAG_END_HEADERS != 0;
                    match kind {
                        TYPE_HEADERS => self.block_open = !ends,
                        TYPE_CONTINUATION if ends => self.block_open = false,
                        _ => {}
                    }
                    *have = 0;
                    *skip = length;
                }
            }
        }
        match (was_open, self.block_open) {
            (false, true) => Some(Event::HeaderBlockOpened),
            (true, false) => Some(Event::HeaderBlockClosed),
            _ => None,
        }
    }

    /// True once the preface has been seen whole.
    #[cfg(test)]
    pub(crate) fn is_http2(&self) -> bool {
        matches!(self.state, State::Frames { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, payload: &[u8]) -> Vec<u8> {
        let len = payload.len();
        let mut out = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        out.extend_from_slice(&1u32.to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn a_header_block_opens_and_closes_across_split_reads() {
        let mut stream = PREFACE.to_vec();
        stream.extend(frame(0x4, 0, &[0; 6])); // SETTINGS
        let open_at = stream.len();
        stream.extend(frame(TYPE_HEADERS, 0, &[0x82; 20]));
        let close_at = stream.len();
        stream.extend(frame(TYPE_CONTINUATION, FLAG_END_HEADERS, &[0x84; 3]));
        stream.extend(frame(0x0, 0x1, b"{}")); // DATA, END_STREAM

        // Byte by byte: the events come exactly when the frame headers complete.
        let mut sniffer = H2Sniffer::default();
        let mut events = Vec::new();
        for (i, byte) in stream.iter().enumerate() {
            if let Some(event) = sniffer.feed(std::slice::from_ref(byte)) {
                events.push((i, event));
            }
        }
        assert!(sniffer.is_http2());
        assert_eq!(
            events,
            [
                (open_at + FRAME_HEADER_LEN - 1, Event::HeaderBlockOpened),
                (close_at + FRAME_HEADER_LEN - 1, Event::HeaderBlockClosed),
            ]
        );

        // In one read the block opens and closes: no change to report.
        let mut whole = H2Sniffer::default();
        assert_eq!(whole.feed(&stream), None);
        // Up to the open HEADERS frame: open.
        let mut part = H2Sniffer::default();
        assert_eq!(
            part.feed(&stream[..close_at]),
            Some(Event::HeaderBlockOpened)
        );
    }

    #[test]
    fn headers_with_end_headers_never_open_a_block() {
        let mut stream = PREFACE.to_vec();
        stream.extend(frame(TYPE_HEADERS, FLAG_END_HEADERS | 0x1, &[0x82; 5]));
        let mut sniffer = H2Sniffer::default();
        assert_eq!(sniffer.feed(&stream), None);
        assert!(!sniffer.block_open);
    }

    #[test]
    fn http1_and_a_partial_preface_are_told_apart() {
        let mut h1 = H2Sniffer::default();
        assert_eq!(h1.feed(b"POST /controlplane HTTP/1.1\r\n"), None);
        assert_eq!(h1.state, State::Off);
        // Even a HEADERS-looking byte sequence later is not observed.
        assert_eq!(h1.feed(&frame(TYPE_HEADERS, 0, b"x")), None);

        let mut partial = H2Sniffer::default();
        partial.feed(b"PRI * HTTP/2.0\r\n");
        assert_eq!(partial.state, State::Preface { matched: 16 });
        assert!(!partial.is_http2());
    }
}
