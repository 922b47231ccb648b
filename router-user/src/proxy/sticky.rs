//! Reading and hiding the sticky-session cookie in requests (`indirect`: the pod never sees it) and adding
//! it to responses (`nocache`: a response that sets it is marked private).

use http::header::{self, HeaderMap, HeaderValue};

/// The value of cookie `name` in the request's Cookie headers.
pub fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim().to_string())
}

/// Removes cookie `name` from the request, dropping Cookie headers that end up empty.
pub fn remove_cookie(headers: &mut HeaderMap, name: &str) {
    if !headers.contains_key(header::COOKIE) {
        return;
    }
    let kept: Vec<String> = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .map(|value| {
            value
                .split(';')
                .map(str::trim)
                .filter(|pair| !pair.is_empty() && pair.split_once('=').is_none_or(|(key, _)| key != name))
                .collect::<Vec<_>>()
                .join("; ")
        })
        .filter(|value| !value.is_empty())
        .collect();
    headers.remove(header::COOKIE);
    for value in kept {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.append(header::COOKIE, value);
        }
    }
}

/// Adds `Set-Cookie` and marks the response private so shared caches do not hand the cookie to others.
pub fn insert_cookie(headers: &mut HeaderMap, set_cookie: String) {
    if let Ok(value) = HeaderValue::from_maybe_shared(bytes::Bytes::from(set_cookie)) {
        headers.append(header::SET_COOKIE, value);
        headers.append(header::CACHE_CONTROL, HeaderValue::from_static("private"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_and_removes_only_the_named_cookie() {
        let mut headers = HeaderMap::new();
        headers.append(header::COOKIE, HeaderValue::from_static("a=1; route=abc; b=2"));
        headers.append(header::COOKIE, HeaderValue::from_static("route=ignored"));
        assert_eq!(cookie_value(&headers, "route").as_deref(), Some("abc"));
        assert_eq!(cookie_value(&headers, "missing"), None);
        remove_cookie(&mut headers, "route");
        let left: Vec<_> = headers.get_all(header::COOKIE).iter().collect();
        assert_eq!(left, ["a=1; b=2"]);
    }
}
