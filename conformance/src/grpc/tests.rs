//! Tests of the gRPC framing and status reading.

use http::HeaderValue;

use super::*;

#[test]
fn frames_round_trip() {
    let mut body = frame(b"one").to_vec();
    body.extend_from_slice(&frame(b""));
    body.extend_from_slice(&frame(b"three"));
    let msgs = unframe(&body).unwrap();
    assert_eq!(msgs, vec![&b"one"[..], &b""[..], &b"three"[..]]);
    assert!(unframe(&body[..body.len() - 1]).is_err());
    assert!(unframe(&[0, 0, 0]).is_err());
    assert!(unframe(&[1, 0, 0, 0, 0]).is_err(), "compressed");
}

#[test]
fn status_from_trailers_then_headers_then_http() {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    trailers.insert("x-conformance-trailer", HeaderValue::from_static("kept"));
    let a = Answer::read(200, &HeaderMap::new(), Some(&trailers), &frame(b"x"));
    assert_eq!((a.code, a.messages), (0, 1));
    assert_eq!(a.trailers["x-conformance-trailer"], "kept");
    assert!(
        a.describe().contains("x-conformance-trailer=kept"),
        "{}",
        a.describe()
    );

    // Trailers-only: Envoy's local reply for a refused gRPC request.
    let mut headers = HeaderMap::new();
    headers.insert("grpc-status", HeaderValue::from_static("7"));
    headers.insert(
        "grpc-message",
        HeaderValue::from_static("RBAC: access denied"),
    );
    let a = Answer::read(200, &headers, None, b"");
    assert_eq!(a.code, 7);
    assert_eq!(a.message, "RBAC: access denied");

    // Plain HTTP 403 (a proxy that answers gRPC like HTTP/1.1): a client reads 7.
    assert_eq!(Answer::read(403, &HeaderMap::new(), None, b"").code, 7);
    // 200 without any grpc-status (trailers lost): UNKNOWN, as a gRPC client sees it.
    assert_eq!(Answer::read(200, &HeaderMap::new(), None, b"").code, 2);
    assert_eq!(code_for_http(503), 14);
    assert_eq!(code_for_http(500), 2);
}
