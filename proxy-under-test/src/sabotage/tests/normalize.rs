//! `raw-path-authz` seen misbehaving where the reference (tested in `normalize` and
//! `dataplane::l7`) does not: with the sabotage, dot segments and escapes reach authorization and
//! the application as sent; without it, the snapshot's options are used as they are.

use crate::normalize::{EscapedSlashes, PathAction, PathNormalization};
use crate::sabotage::{Hooks, Sabotage};

#[test]
fn raw_path_authz_matches_and_forwards_the_path_as_sent() {
    let configured = PathNormalization {
        merge_slashes: true,
        escaped_slashes: EscapedSlashes::RejectRequest,
        ..PathNormalization::default()
    };
    let clean = Hooks::new(Default::default()).path_normalization(configured);
    assert_eq!(clean, configured);
    assert_eq!(
        clean.apply("/x/../admin"),
        PathAction::Forward("/admin".into())
    );

    let raw = Hooks::new(Sabotage::RawPathAuthz.into()).path_normalization(configured);
    for path in ["/x/../admin", "/%61dmin", "/./admin", "//admin", "/a%2Fb"] {
        assert_eq!(raw.apply(path), PathAction::Forward(path.into()), "{path}");
    }
}
