//! Judging what the application received on an `http` check (`app_headers`, `app_without`):
//! every request the check sent must have carried each wanted header with exactly its value
//! (several values joined with `, `, so a forged copy beside the real one fails) and none of the
//! unwanted ones. `{jwt-payload}` is the payload segment of the check's token.

use std::collections::BTreeMap;

/// The wanted value of `raw` for the token `bearer` (`Bearer <jwt>`), placeholders resolved.
fn resolve(raw: &str, bearer: Option<&str>) -> Option<String> {
    let segment = || {
        bearer?
            .strip_prefix("Bearer ")?
            .split('.')
            .nth(1)
            .map(str::to_owned)
    };
    match raw {
        "{jwt-payload}" => segment(),
        "{jwt-payload-padded}" => segment().map(|mut s| {
            while s.len() % 4 != 0 {
                s.push('=');
            }
            s
        }),
        other => Some(other.to_owned()),
    }
}

/// Whether `received` (each request's headers) holds what the check wants, and what was seen.
pub(crate) fn judge(
    received: &[Vec<(String, String)>],
    want: &BTreeMap<String, String>,
    without: &[String],
    bearer: Option<&str>,
) -> (bool, String) {
    if received.is_empty() {
        return (false, "the app received no request".to_owned());
    }
    let mut ok = true;
    let mut seen = Vec::new();
    for headers in received {
        let values = |name: &str| {
            headers
                .iter()
                .filter(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
        };
        for (name, raw) in want {
            let got = values(name);
            let expected = resolve(raw, bearer);
            let text = if got.is_empty() {
                "nothing".to_owned()
            } else {
                got.join(", ")
            };
            if expected.as_deref() != Some(text.as_str()) {
                ok = false;
            }
            seen.push(format!("{name}: {text}"));
        }
        for name in without {
            let got = values(name);
            if !got.is_empty() {
                ok = false;
                seen.push(format!("{name}: {} (unwanted)", got.join(", ")));
            }
        }
    }
    let text = if seen.is_empty() {
        "none of the unwanted headers".to_owned()
    } else {
        seen.join("; ")
    };
    (ok, format!("the app received {text}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn placeholders_values_and_absences() {
        let bearer = Some("Bearer aaa.eyJhIjoxfQ.sig");
        let want: BTreeMap<_, _> = [("x-p".to_owned(), "{jwt-payload}".to_owned())].into();
        let padded: BTreeMap<_, _> = [("x-p".to_owned(), "{jwt-payload-padded}".to_owned())].into();
        assert!(judge(&[h(&[("x-p", "eyJhIjoxfQ")])], &want, &[], bearer).0);
        assert!(judge(&[h(&[("X-P", "eyJhIjoxfQ==")])], &padded, &[], bearer).0);
        // A forged copy beside the real one, a missing header, no token, no request: all fail.
        let (ok, text) = judge(
            &[h(&[("x-p", "forged"), ("x-p", "eyJhIjoxfQ")])],
            &want,
            &[],
            bearer,
        );
        assert!(!ok && text.contains("forged, eyJhIjoxfQ"), "{text}");
        assert!(!judge(&[h(&[])], &want, &[], bearer).0);
        assert!(!judge(&[h(&[("x-p", "eyJhIjoxfQ")])], &want, &[], None).0);
        assert!(!judge(&[], &want, &[], bearer).0);
        let without = ["x-forged".to_owned()];
        assert!(judge(&[h(&[("x-other", "1")])], &BTreeMap::new(), &without, None).0);
        let (ok, text) = judge(&[h(&[("x-forged", "1")])], &BTreeMap::new(), &without, None);
        assert!(!ok && text.contains("unwanted"), "{text}");
        // Every request of the check must hold.
        let two = [h(&[("x-p", "eyJhIjoxfQ")]), h(&[])];
        assert!(!judge(&two, &want, &[], bearer).0);
    }
}
