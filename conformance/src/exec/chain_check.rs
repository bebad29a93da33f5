//! What `served-leaf` checks about key kinds and chains: the served leaf's key type and size,
//! and that the presented chain is the leaf then exactly the active root's `IntermediateCerts`.

use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use x509_parser::prelude::{FromDer, X509Certificate};
use x509_parser::public_key::PublicKey;

/// Why the leaf's key is not `key_type`/`key_bits` (each `None` = any), or `None` if it is.
pub(super) fn key_problem(
    leaf: &CertificateDer<'_>,
    key_type: Option<&str>,
    key_bits: Option<u32>,
) -> Option<String> {
    if key_type.is_none() && key_bits.is_none() {
        return None;
    }
    let Ok((_, cert)) = X509Certificate::from_der(leaf.as_ref()) else {
        return Some("the served leaf does not parse".into());
    };
    let (ty, bits) = match cert.public_key().parsed() {
        Ok(PublicKey::RSA(rsa)) => ("rsa", rsa.key_size()),
        Ok(PublicKey::EC(ec)) => ("ec", ec.key_size()),
        _ => ("other", 0),
    };
    let bits = u32::try_from(bits).unwrap_or(0);
    let type_ok = key_type.is_none_or(|t| t == ty);
    let bits_ok = key_bits.is_none_or(|b| b == bits);
    (!(type_ok && bits_ok)).then(|| {
        format!(
            "leaf key is {ty}-{bits}, not {}-{}",
            key_type.unwrap_or(ty),
            key_bits.map_or_else(|| "any".to_owned(), |b| b.to_string())
        )
    })
}

/// Why `chain` is not the leaf followed by exactly `intermediates` (PEMs, in order), or `None`.
pub(super) fn chain_problem(
    chain: &[CertificateDer<'_>],
    intermediates: &[String],
) -> Option<String> {
    let want: Vec<CertificateDer<'static>> = intermediates
        .iter()
        .flat_map(|pem| CertificateDer::pem_slice_iter(pem.as_bytes()).filter_map(Result::ok))
        .collect();
    let got = chain.get(1..).unwrap_or_default();
    if got == want.as_slice() {
        None
    } else {
        Some(format!(
            "presented {} certificate(s) after the leaf, want the active root's {} IntermediateCerts",
            got.len(),
            want.len()
        ))
    }
}
