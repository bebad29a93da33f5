//! Unit tests of key generation, PEM encodings and import.

use super::*;

#[test]
fn sec1_round_trips_through_import() {
    let key = generate().unwrap();
    let pem = private_key_pem(&key).unwrap();
    assert!(pem.starts_with("-----BEGIN EC PRIVATE KEY-----\n"));
    assert!(pem.ends_with("-----END EC PRIVATE KEY-----\n"));
    let back = import_pem(&pem).unwrap();
    assert_eq!(back.public_key_raw(), key.public_key_raw());
}

#[test]
fn sec1_layout_matches_go_marshal_ec_private_key() {
    let key = generate().unwrap();
    let pem = private_key_pem(&key).unwrap();
    let der = PrivateKeyDer::from_pem_slice(pem.as_bytes()).unwrap();
    let PrivateKeyDer::Sec1(sec1) = der else {
        panic!("not SEC1")
    };
    let mut seq = Der::new(sec1.secret_sec1_der())
        .expect_tag(SEQUENCE)
        .unwrap();
    assert_eq!(seq.expect_tag(INTEGER).unwrap().rest, [1]);
    assert_eq!(seq.expect_tag(OCTET_STRING).unwrap().rest.len(), 32);
    let mut params = seq.expect_tag(CONTEXT_0).unwrap();
    assert_eq!(params.expect_tag(OID).unwrap().rest, OID_P256);
    let mut public = seq.expect_tag(CONTEXT_1).unwrap();
    let bits = public.expect_tag(BIT_STRING).unwrap().rest;
    assert_eq!(&bits[1..], key.public_key_raw());
    assert!(seq.next().is_none());
}

#[test]
fn pkcs8_pem_is_accepted_too() {
    let key = generate().unwrap();
    let back = import_pem(&key.serialize_pem()).unwrap();
    assert_eq!(back.public_key_raw(), key.public_key_raw());
}

#[test]
fn bad_keys_are_errors_not_panics() {
    assert!(matches!(
        import_pem("not a pem"),
        Err(CaError::InvalidConfig(_))
    ));
    let rsa = pem_encode("RSA PRIVATE KEY", &[0x30, 0x00]);
    assert!(matches!(import_pem(&rsa), Err(CaError::InvalidConfig(_))));
    let garbage = pem_encode("EC PRIVATE KEY", &[0x30, 0x03, 0x02, 0x01]);
    assert!(matches!(
        import_pem(&garbage),
        Err(CaError::InvalidConfig(_))
    ));
    let bad_pkcs8 = pem_encode("PRIVATE KEY", &[0x30, 0x00]);
    assert!(matches!(
        import_pem(&bad_pkcs8),
        Err(CaError::UnsupportedKey(_))
    ));
}

#[test]
fn key_id_is_sha256_of_spki() {
    let key = generate().unwrap();
    let id = key_id(&key);
    assert_eq!(id.len(), 32);
    assert_eq!(id, sha256(&key.subject_public_key_info()));
}

#[test]
fn long_lengths_encode_and_decode() {
    let content = vec![9u8; 300];
    let encoded = tlv(OCTET_STRING, &content);
    assert_eq!(&encoded[..4], &[OCTET_STRING, 0x82, 0x01, 0x2c]);
    let (tag, back) = Der::new(&encoded).next().unwrap();
    assert_eq!((tag, back), (OCTET_STRING, &content[..]));
    assert!(Der::new(&encoded[..10]).next().is_none(), "truncated input");
}
