//! The HTTP API through the router (no sockets, paused clock): random methods, paths, queries,
//! headers and bodies, ACLs off and on. Every request gets a complete answer in bounded
//! (virtual) time, no panic, and no 5xx outside the documented set.

use axum::http::Method;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use super::bodies::body_request;
use super::strategies::request;
use super::support::{Req, app, check_answer, config, paused_runtime, send};

/// Sends every request to a fresh sim and checks each answer.
fn run(acl: bool, reqs: &[Req]) -> Result<(), TestCaseError> {
    paused_runtime().block_on(async {
        let a = app(acl);
        for r in reqs {
            let answer = send(&a.router, r).await.map_err(TestCaseError::fail)?;
            if let Some(mut answer) = answer {
                if r.method == Method::HEAD && answer.status >= 500 {
                    // HEAD has no body to judge: judge the GET it stands for.
                    let get = Req {
                        method: Method::GET,
                        ..r.clone()
                    };
                    answer = send(&a.router, &get)
                        .await
                        .map_err(TestCaseError::fail)?
                        .ok_or_else(|| TestCaseError::fail("GET unbuildable"))?;
                }
                check_answer(r, &answer).map_err(TestCaseError::fail)?;
            }
        }
        Ok(())
    })
}

proptest! {
    #![proptest_config(config(100, "proptest-regressions/fuzz/http.txt"))]

    #[test]
    fn any_request_gets_a_clear_answer(
        acl in any::<bool>(),
        reqs in prop::collection::vec(request(), 1..6),
    ) {
        run(acl, &reqs)?;
    }

    #[test]
    fn any_body_gets_a_clear_answer(
        acl in any::<bool>(),
        reqs in prop::collection::vec(body_request(), 1..6),
    ) {
        run(acl, &reqs)?;
    }

    #[test]
    fn requests_with_bodies_and_junk_anywhere(
        acl in any::<bool>(),
        reqs in prop::collection::vec(
            (request(), super::bodies::bad_body()).prop_map(|(r, b)| r.body(b)),
            1..4,
        ),
    ) {
        run(acl, &reqs)?;
    }
}
