//! The gRPC wire, as much as the harness's test servers and probes need (no codegen, no
//! protobuf: messages are opaque bytes): length-prefixed message framing, the status a gRPC
//! client reads from an answer (trailers, trailers-only headers, or the HTTP status mapped as
//! the gRPC HTTP/2 spec says), and the method set of the harness's gRPC server.

use std::collections::BTreeMap;

use bytes::{BufMut, Bytes, BytesMut};
use http::HeaderMap;

/// `content-type` of gRPC requests and answers.
pub(crate) const CONTENT_TYPE: &str = "application/grpc";

/// The trailer every answer of the harness's gRPC servers carries (`drop-trailers` loses it).
pub(crate) const TRAILER: (&str, &str) = ("x-conformance-trailer", "kept");
/// Trailer: the method path the server saw.
pub(crate) const TRAILER_PATH: &str = "x-conformance-path";
/// Trailer: the instance (or `app`) that answered.
pub(crate) const TRAILER_SERVED_BY: &str = "x-conformance-served-by";
/// Trailer: the service named by the client certificate the server saw (instances only).
pub(crate) const TRAILER_CLIENT: &str = "x-conformance-client";
/// Request metadata carrying the probe's token (what an instance records).
pub(crate) const TOKEN_HEADER: &str = "x-conformance-token";

/// The methods the harness's servers know: `Echo/Unary` and `Echo/Other` answer OK with the
/// request message; `Admin/Reset` too; any other path answers UNIMPLEMENTED (12).
pub(crate) const METHODS: &[&str] = &[
    "/conformance.Echo/Unary",
    "/conformance.Echo/Other",
    "/conformance.Admin/Reset",
];

/// Frames one message (uncompressed).
pub(crate) fn frame(msg: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(5 + msg.len());
    b.put_u8(0);
    b.put_u32(u32::try_from(msg.len()).unwrap_or(u32::MAX));
    b.put_slice(msg);
    b.freeze()
}

/// The messages of a complete body; `Err` on a truncated or compressed frame.
pub(crate) fn unframe(mut body: &[u8]) -> Result<Vec<Bytes>, String> {
    let mut out = Vec::new();
    while !body.is_empty() {
        let Some((head, rest)) = body.split_first_chunk::<5>() else {
            return Err("truncated gRPC frame header".into());
        };
        if head[0] != 0 {
            return Err("compressed gRPC frame".into());
        }
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        if rest.len() < len {
            return Err("truncated gRPC message".into());
        }
        out.push(Bytes::copy_from_slice(&rest[..len]));
        body = &rest[len..];
    }
    Ok(out)
}

/// The gRPC status code for an HTTP status that came without `grpc-status` (gRPC's
/// "HTTP to gRPC status code mapping").
pub(crate) fn code_for_http(status: u16) -> u32 {
    match status {
        400 => 13,
        401 => 16,
        403 => 7,
        404 => 12,
        429 | 502..=504 => 14,
        _ => 2,
    }
}

/// What a client read from an answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Answer {
    /// The HTTP status.
    pub(crate) http: u16,
    /// The gRPC status code.
    pub(crate) code: u32,
    /// `grpc-message`, if any.
    pub(crate) message: String,
    /// Trailers (or, for a trailers-only answer, the headers), lower-case names.
    pub(crate) trailers: BTreeMap<String, String>,
    /// Messages received.
    pub(crate) messages: usize,
}

impl Answer {
    /// Reads an answer from its status, headers, trailers and body.
    pub(crate) fn read(
        http: u16,
        headers: &HeaderMap,
        trailers: Option<&HeaderMap>,
        body: &[u8],
    ) -> Self {
        let meta = trailers.unwrap_or(headers);
        let text = |m: &HeaderMap, k: &str| {
            m.get(k)
                .and_then(|v| v.to_str().ok())
                .map(ToOwned::to_owned)
        };
        let code = match text(meta, "grpc-status").or_else(|| text(headers, "grpc-status")) {
            Some(c) => c.trim().parse().unwrap_or(2),
            None if http == 200 => 2,
            None => code_for_http(http),
        };
        let message = text(meta, "grpc-message").unwrap_or_default();
        let trailers = meta
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect();
        let messages = unframe(body).map_or(0, |m| m.len());
        Self {
            http,
            code,
            message,
            trailers,
            messages,
        }
    }

    /// One line for the timeline.
    pub(crate) fn describe(&self) -> String {
        let mut t = format!("HTTP {} grpc-status {}", self.http, self.code);
        if !self.message.is_empty() {
            t.push_str(&format!(" ({})", self.message));
        }
        let custom: Vec<String> = self
            .trailers
            .iter()
            .filter(|(k, _)| k.starts_with("x-conformance-"))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if custom.is_empty() {
            t.push_str(", no x-conformance trailers");
        } else {
            t.push_str(&format!(", trailers {}", custom.join(" ")));
        }
        t
    }
}

#[cfg(test)]
mod tests;
