//! `CustomizationHash`: Consul hashes the overrides that changed the chain with
//! `mitchellh/hashstructure` (v1, FNV-1 64) and keeps the first 8 hex digits of `%x`. This is a
//! port of exactly the part of that walk the override struct needs, so the value matches Consul's.

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1 (multiply, then xor), Go's `hash/fnv.New64`.
fn fnv1(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(FNV_OFFSET, |h, b| h.wrapping_mul(FNV_PRIME) ^ u64::from(*b))
}

fn hash_str(s: &str) -> u64 {
    fnv1(s.as_bytes())
}

/// `hashUpdateOrdered`: both hashes written little-endian into a fresh hasher.
fn ordered(a: u64, b: u64) -> u64 {
    let mut buf = [0u8; 16];
    buf[..8].copy_from_slice(&a.to_le_bytes());
    buf[8..].copy_from_slice(&b.to_le_bytes());
    fnv1(&buf)
}

/// A struct: the hash of its type name, xor-ed with `ordered(name, value)` of every field.
fn hash_struct(type_name: &str, fields: &[(&str, u64)]) -> u64 {
    fields.iter().fold(hash_str(type_name), |h, (name, value)| {
        h ^ ordered(hash_str(name), *value)
    })
}

/// The hash of Consul's anonymous `{OverrideMeshGateway, OverrideProtocol,
/// OverrideConnectTimeout}` struct, with unchanged overrides passed as zero values.
pub(crate) fn customization_hash(
    mesh_gateway_mode: &str,
    protocol: &str,
    timeout_ns: i64,
) -> String {
    let mesh_gateway = hash_struct(
        "MeshGatewayConfig",
        &[("Mode", hash_str(mesh_gateway_mode))],
    );
    let value = hash_struct(
        "",
        &[
            ("OverrideMeshGateway", mesh_gateway),
            ("OverrideProtocol", hash_str(protocol)),
            ("OverrideConnectTimeout", fnv1(&timeout_ns.to_le_bytes())),
        ],
    );
    let hex = format!("{value:x}");
    hex.chars().take(8).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1_known_vectors() {
        assert_eq!(fnv1(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1(b"a"), 0xaf63_bd4c_8601_b7be);
    }

    #[test]
    fn matches_consul_endpoint_test_vector() {
        // agent/discovery_chain_endpoint_test.go: overrides mesh gateway "local", protocol
        // "grpc" and connect timeout 22s on a chain they all change -> "98809527".
        assert_eq!(
            customization_hash("local", "grpc", 22_000_000_000),
            "98809527"
        );
    }

    #[test]
    fn only_changed_overrides_count() {
        let all = customization_hash("local", "grpc", 22_000_000_000);
        assert_ne!(customization_hash("", "grpc", 22_000_000_000), all);
        assert_eq!(customization_hash("", "tcp", 0).len(), 8);
    }
}
