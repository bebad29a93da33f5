//! The HTTP path match both L7 matchers share (an intention permission's `HTTP` and a router
//! route's `Match.HTTP`): at most one of `PathExact`, `PathPrefix`, `PathRegex`, and the first
//! two start with `/`. One check, with Consul's texts for either place.

use super::go_quote;

/// Checks the three path fields of an HTTP match and returns how many are set (0 or 1).
/// `at` names the match in the error text (`Sources[0].Permissions[1].HTTP`, `Route[2]`) and
/// `sep` is what Consul puts between it and the field name (`.` for permissions, ` ` for routes).
pub(crate) fn validate_path_match(
    at: &str,
    sep: char,
    exact: &str,
    prefix: &str,
    regex: &str,
) -> Result<usize, String> {
    for (field, value) in [("PathExact", exact), ("PathPrefix", prefix)] {
        if !value.is_empty() && !value.starts_with('/') {
            return Err(format!(
                "{at}{sep}{field} doesn't start with '/': {}",
                go_quote(value)
            ));
        }
    }
    let parts = [exact, prefix, regex]
        .into_iter()
        .filter(|v| !v.is_empty())
        .count();
    if parts > 1 {
        return Err(format!(
            "{at} should only contain at most one of PathExact, PathPrefix, or PathRegex"
        ));
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_for_both_places() {
        assert_eq!(validate_path_match("Route[0]", ' ', "", "", ""), Ok(0));
        assert_eq!(validate_path_match("Route[0]", ' ', "", "", "x.*"), Ok(1));
        assert_eq!(
            validate_path_match("Route[1]", ' ', "a", "", ""),
            Err("Route[1] PathExact doesn't start with '/': \"a\"".into())
        );
        assert_eq!(
            validate_path_match("Sources[0].Permissions[0].HTTP", '.', "", "b", ""),
            Err("Sources[0].Permissions[0].HTTP.PathPrefix doesn't start with '/': \"b\"".into())
        );
        assert_eq!(
            validate_path_match("Route[2]", ' ', "/a", "/b", ""),
            Err(
                "Route[2] should only contain at most one of PathExact, PathPrefix, or PathRegex"
                    .into()
            )
        );
    }
}
