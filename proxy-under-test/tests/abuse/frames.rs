//! Hand-built HTTP/1.1 and HTTP/2 abuse: malformed requests, a good preface followed by invalid
//! or hostile frames (encoded here, byte by byte, so nothing in between can fix them), and a
//! proptest strategy of random frames.

use proptest::prelude::*;

/// The HTTP/2 client connection preface.
pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

const DATA: u8 = 0;
const HEADERS: u8 = 1;
const PRIORITY: u8 = 2;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const PING: u8 = 6;
const GOAWAY: u8 = 7;
const WINDOW_UPDATE: u8 = 8;
const CONTINUATION: u8 = 9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;

/// One frame: 24-bit length (as given, even if it lies), type, flags, stream id, payload.
pub(crate) fn frame_with_len(
    len: u32,
    kind: u8,
    flags: u8,
    stream: u32,
    payload: &[u8],
) -> Vec<u8> {
    let mut f = Vec::with_capacity(9 + payload.len());
    f.extend_from_slice(&len.to_be_bytes()[1..]);
    f.push(kind);
    f.push(flags);
    f.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    f.extend_from_slice(payload);
    f
}

pub(crate) fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
    frame_with_len(len, kind, flags, stream, payload)
}

/// `GET https://db/` in HPACK: static-table indexes and one literal authority.
pub(crate) fn get_block() -> Vec<u8> {
    vec![0x82, 0x87, 0x84, 0x41, 0x02, b'd', b'b']
}

/// The preface and an empty SETTINGS frame.
fn opened() -> Vec<u8> {
    let mut v = PREFACE.to_vec();
    v.extend(frame(SETTINGS, 0, 0, &[]));
    v
}

fn with(mut head: Vec<u8>, frames: impl IntoIterator<Item = Vec<u8>>) -> Vec<u8> {
    for f in frames {
        head.extend(f);
    }
    head
}

/// Named HTTP/2 attacks after a good preface (or instead of one).
pub(crate) fn h2_attacks() -> Vec<(&'static str, Vec<u8>)> {
    let get = get_block();
    // A header block of 64 KiB of literal headers (over any sane header list limit).
    let mut big_block = get.clone();
    for i in 0..2000u32 {
        let name = format!("x-h{i}");
        big_block.push(0x40);
        big_block.push(u8::try_from(name.len()).unwrap());
        big_block.extend(name.as_bytes());
        big_block.push(24);
        big_block.extend([b'v'; 24]);
    }
    vec![
        ("bad preface", b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n".to_vec()),
        ("half a preface", PREFACE[..10].to_vec()),
        (
            "HTTP/1 after h2 ALPN",
            b"GET / HTTP/1.1\r\nHost: db\r\n\r\n".to_vec(),
        ),
        (
            "preface, then garbage",
            with(PREFACE.to_vec(), [vec![0xff; 64]]),
        ),
        (
            "frame longer than max frame size",
            with(opened(), [frame_with_len(0xff_ffff, DATA, 0, 1, &[0; 32])]),
        ),
        (
            "settings with a bad length",
            with(opened(), [frame(SETTINGS, 0, 0, &[0; 5])]),
        ),
        (
            "settings on a stream",
            with(opened(), [frame(SETTINGS, 0, 1, &[])]),
        ),
        (
            "data on stream 0",
            with(opened(), [frame(DATA, 0, 0, b"x")]),
        ),
        (
            "headers on stream 0",
            with(opened(), [frame(HEADERS, END_HEADERS, 0, &get)]),
        ),
        (
            "headers on an even stream",
            with(opened(), [frame(HEADERS, END_HEADERS, 2, &get)]),
        ),
        (
            "garbage HPACK",
            with(opened(), [frame(HEADERS, END_HEADERS, 1, &[0xff; 40])]),
        ),
        (
            "window update of 0",
            with(opened(), [frame(WINDOW_UPDATE, 0, 0, &[0; 4])]),
        ),
        (
            "window overflow",
            with(
                opened(),
                [
                    frame(WINDOW_UPDATE, 0, 0, &0x7fff_ffffu32.to_be_bytes()),
                    frame(WINDOW_UPDATE, 0, 0, &0x7fff_ffffu32.to_be_bytes()),
                ],
            ),
        ),
        (
            "priority on itself",
            with(opened(), [frame(PRIORITY, 0, 1, &[0, 0, 0, 1, 16])]),
        ),
        (
            "ping with a bad length",
            with(opened(), [frame(PING, 0, 0, &[0; 3])]),
        ),
        (
            "goaway then more",
            with(
                opened(),
                [
                    frame(GOAWAY, 0, 0, &[0; 8]),
                    frame(HEADERS, END_HEADERS | END_STREAM, 1, &get),
                ],
            ),
        ),
        (
            "continuation without headers",
            with(opened(), [frame(CONTINUATION, END_HEADERS, 1, &get)]),
        ),
        (
            "continuation flood (8 MiB, never ending the block)",
            with(
                opened(),
                std::iter::once(frame(HEADERS, 0, 1, &get))
                    .chain((0..512).map(|_| frame(CONTINUATION, 0, 1, &[0x40; 16_384]))),
            ),
        ),
        (
            "oversize header list",
            with(
                opened(),
                [frame(HEADERS, END_HEADERS | END_STREAM, 1, &big_block)],
            ),
        ),
        (
            "rapid reset (2000 streams opened and reset)",
            with(
                opened(),
                (0..2000u32).flat_map(|i| {
                    let id = 1 + 2 * i;
                    [
                        frame(HEADERS, END_HEADERS | END_STREAM, id, &get),
                        frame(RST_STREAM, 0, id, &8u32.to_be_bytes()),
                    ]
                }),
            ),
        ),
        (
            "settings flood",
            with(
                opened(),
                (0..5000).map(|_| frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100])),
            ),
        ),
        (
            "ping flood",
            with(opened(), (0..5000).map(|_| frame(PING, 0, 0, &[7; 8]))),
        ),
    ]
}

/// Random frames after a good preface: any type (known or not), flags, stream and payload.
pub(crate) fn random_frames() -> impl Strategy<Value = Vec<u8>> {
    let one = (
        prop_oneof![0u8..=10, any::<u8>()],
        any::<u8>(),
        prop_oneof![Just(0u32), Just(1), Just(3), any::<u32>()],
        prop_oneof![
            prop::collection::vec(any::<u8>(), 0..64),
            Just(get_block()),
            Just(vec![0, 0, 0, 1]),
        ],
        prop::option::of(any::<u32>()),
    )
        .prop_map(|(kind, flags, stream, payload, lie)| match lie {
            Some(len) => frame_with_len(len & 0x3fff, kind, flags, stream, &payload),
            None => frame(kind, flags, stream, &payload),
        });
    (any::<bool>(), prop::collection::vec(one, 0..12)).prop_map(|(settings, frames)| {
        let head = if settings { opened() } else { PREFACE.to_vec() };
        with(head, frames)
    })
}

/// Named HTTP/1.1 attacks (each a whole request, or the start of one).
pub(crate) fn h1_attacks() -> Vec<(&'static str, Vec<u8>)> {
    let huge_header = format!(
        "GET / HTTP/1.1\r\nHost: db\r\nX-Big: {}\r\n\r\n",
        "a".repeat(1 << 20)
    );
    let many_headers = format!(
        "GET / HTTP/1.1\r\nHost: db\r\n{}\r\n",
        (0..20_000)
            .map(|i| format!("X-{i}: v\r\n"))
            .collect::<String>()
    );
    let long_uri = format!("GET /{} HTTP/1.1\r\nHost: db\r\n\r\n", "p".repeat(200_000));
    vec![
        ("garbage request line", b"\x00\x01\x02 nonsense\r\n\r\n".to_vec()),
        ("no version", b"GET /\r\n\r\n".to_vec()),
        ("header without a colon", b"GET / HTTP/1.1\r\nHost db\r\n\r\n".to_vec()),
        ("header name with a space", b"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n".to_vec()),
        ("non-UTF-8 header value", b"GET / HTTP/1.1\r\nHost: db\r\nX: \xff\xfe\r\n\r\n".to_vec()),
        ("oversize header (1 MiB)", huge_header.into_bytes()),
        ("20000 headers", many_headers.into_bytes()),
        ("200 KB URI", long_uri.into_bytes()),
        (
            "bad chunk size",
            b"POST / HTTP/1.1\r\nHost: db\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nx\r\n0\r\n\r\n"
                .to_vec(),
        ),
        (
            "content-length and chunked",
            b"POST / HTTP/1.1\r\nHost: db\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n".to_vec(),
        ),
        (
            "two content-lengths",
            b"POST / HTTP/1.1\r\nHost: db\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab".to_vec(),
        ),
        ("negative content-length", b"POST / HTTP/1.1\r\nHost: db\r\nContent-Length: -1\r\n\r\n".to_vec()),
        (
            "body shorter than its content-length",
            b"POST / HTTP/1.1\r\nHost: db\r\nContent-Length: 1000000\r\n\r\nshort".to_vec(),
        ),
        ("h2 preface over http/1.1", PREFACE.to_vec()),
        ("request line cut short", b"GET / HT".to_vec()),
    ]
}
