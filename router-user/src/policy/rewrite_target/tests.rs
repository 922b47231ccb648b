//! Tables for rewrite-target: the rows of OpenShift's sanitiser and template tests, then whole rewrites as
//! HAProxy performs them (worked out from its configuration parser, log-format compiler and `exp_replace`).

use http::uri::PathAndQuery;

use super::*;

/// OpenShift's sanitiser rows (`rewritetarget_test.go`, `Test_SanitizeInput`): value -> sanitised text.
#[test]
fn sanitize_matches_the_openshift_helper() {
    let rows = [
        (r"%foo", r"%%foo\1"),
        (r"%%foo", r"%%foo\1"),
        (r"%%%foo", r"%%%%%%foo\1"),
        (r"%%%%foo", r"%%%%foo\1"),
        (r"'foo'foo\'", r"foofoo'\''\1"),
        (r"\foo\", r"foo\1"),
        (r"\\foo\\", r"\foo\\1"),
        (r"\\\foo\\\", r"\\foo\\\1"),
        (r"\\\\foo\\\\", r"\\foo\\\1"),
        (r"# foo # foo", r""),
        (r"\# foo # foo", r"# foo "),
        (r"foo # foo", r"foo "),
        (r#""foo"foo\""#, r#"foofoo"\1"#),
        (r#"\\foo\"foo"\#foo\foo'foo\'#foo"#, r#"\foo"foo#foofoofoo'\''"#),
    ];
    for (value, want) in rows {
        assert_eq!(sanitize(value), want, "value {value:?}");
    }
}

/// The route path in the rule's regex: OpenShift's quoting rows (`Test_EscapeSingleQuotes`) keep every
/// character literal and drop carriage returns and line feeds.
#[test]
fn route_path_is_literal_without_line_breaks() {
    let rows = [
        ("/foo", "/foo"),
        ("/foo/bar", "/foo/bar"),
        ("/it's", "/it's"),
        ("'", "'"),
        ("''", "''"),
        ("/foo\nbar", "/foobar"),
        ("/foo\rbar", "/foobar"),
        ("/foo\r\nbar", "/foobar"),
        ("/it's\r\n", "/it's"),
        ("/foo\n\n\nbar", "/foobar"),
        ("\r\n", ""),
    ];
    for (path, want) in rows {
        let rule = RewriteTarget::new("/", Some(path)).expect("applied");
        assert_eq!(rule.route_path, want, "path {path:?}");
    }
}

/// The configuration lines of OpenShift's template test (`router_test.go`): `replace-path '^/app/?(.*)$' '/\1'`,
/// `'^/api/v1(.*)$' '/v2\1'` and `'^/foo'\''/?(.*)$' '/\1'`.
#[test]
fn template_rows_compile_to_the_same_rule() {
    let rows = [
        ("/app", "/", "/app", true, vec![Part::Bytes(b"/".to_vec()), Part::Group(1)]),
        ("/api/v1", "/v2", "/api/v1", false, vec![Part::Bytes(b"/v2".to_vec()), Part::Group(1)]),
        ("/foo'", "/", "/foo'", true, vec![Part::Bytes(b"/".to_vec()), Part::Group(1)]),
    ];
    for (path, value, regex_path, absorbs_slash, parts) in rows {
        let rule = RewriteTarget::new(value, Some(path)).expect("applied");
        let want =
            RewriteTarget { route_path: regex_path.to_string(), absorbs_slash, replacement: Replacement::Parts(parts) };
        assert_eq!(rule, want, "path {path:?} value {value:?}");
    }
}

enum Want {
    To(&'static [u8]),
    Unchanged,
    Failed,
}

/// Whole rewrites: (spec.path, annotation value, request path) -> what HAProxy sends.
#[test]
fn rewrites_send_what_haproxy_sends() {
    use Want::*;
    let rows: &[(Option<&str>, &str, &str, Want)] = &[
        // The template test's routes.
        (Some("/app"), "/", "/app", To(b"/")),
        (Some("/app"), "/", "/app/", To(b"/")),
        (Some("/app"), "/", "/app/x/y", To(b"/x/y")),
        (Some("/app"), "/", "/app//x", To(b"//x")),
        (Some("/api/v1"), "/v2", "/api/v1/users", To(b"/v2/users")),
        (Some("/api/v1"), "/v2", "/api/v1", To(b"/v2")),
        (Some("/foo'"), "/", "/foo'/x", To(b"/x")),
        (Some("/sub"), "/app/", "/sub/x", To(b"/app//x")),
        // No spec.path: the regex is `^(.*)$`, the whole path follows the value.
        (None, "/app", "/foo", To(b"/app/foo")),
        (None, "/app", "/", To(b"/app/")),
        (Some(""), "/app", "/foo/bar", To(b"/app/foo/bar")),
        (None, "/", "/foo", To(b"/foo")),
        (None, "/app/", "/foo", To(b"/app//foo")),
        // spec.path `/` is part of the regex, unlike an empty path.
        (Some("/"), "/app", "/foo", To(b"/appfoo")),
        (Some("/"), "/", "/foo", To(b"/foo")),
        (Some("/"), "/", "//foo", To(b"/foo")),
        // The sanitiser's rows as values, under spec.path /p.
        (Some("/p"), "/%foo", "/p/x", To(b"/%foo/x")),
        (Some("/p"), "/%%foo", "/p/x", To(b"/%foo/x")),
        (Some("/p"), "/%%%foo", "/p/x", To(b"/%%%foo/x")),
        (Some("/p"), "/%%%%foo", "/p/x", To(b"/%%foo/x")),
        (Some("/p"), r"/'foo'foo\'", "/p/x", To(b"/foofoo'/x")),
        (Some("/p"), r"/\foo\", "/p/x", To(b"/foo/x")),
        (Some("/p"), r"/\\foo\\", "/p/x", To(br"/foo\1")),
        (Some("/p"), r"/\\\foo\\\", "/p/x", To(br"/\foo\/x")),
        (Some("/p"), r"/\\\\foo\\\\", "/p/x", To(br"/\foo\/x")),
        (Some("/p"), "/# foo # foo", "/p/x", To(b"/")),
        (Some("/p"), r"/\# foo # foo", "/p/x", To(b"/# foo ")),
        (Some("/p"), "/foo # foo", "/p/x", To(b"/foo ")),
        (Some("/p"), r#"/"foo"foo\""#, "/p/x", To(b"/foofoo\"/x")),
        (Some("/p"), r#"/\\foo\"foo"\#foo\foo'foo\'#foo"#, "/p/x", To(b"/foo\"foo#foofoofoo'")),
        // HAProxy's own reading: no variables or comments inside quotes, no log-format expressions.
        (Some("/p"), "/a$b", "/p/x", To(b"/a$b/x")),
        (Some("/p"), "/a%[src]", "/p/x", To(b"/a%[src]/x")),
        (Some("/p"), "/a b", "/p/x", To(b"/a b/x")),
        (Some("/p"), "/v2 ", "/p/x", To(b"/v2 /x")),
        (Some("/p"), "/#\r", "/p/x", To(b"/")),
        // Its replacement escapes.
        (Some("/p"), r"/v\\x41", "/p/x", To(b"/vA/x")),
        (Some("/p"), r"/v\\x4a", "/p/x", To(b"/vJ/x")),
        (Some("/p"), r"/v\\xZZ", "/p/x", To(b"/vS/x")),
        (Some("/p"), r"/v\\0", "/p/x", To(b"/v/p/x/x")),
        (Some("/p"), r"/v\\2", "/p/x", To(b"/v/x")),
        (Some("/p"), r"/x\\", "/p/x", To(br"/x\1")),
        (Some("/p"), r"/x\\#", "/p/x", Failed),
        (Some("/p"), r"/x\\x4#", "/p/x", Failed),
        // A path the regex does not match is left alone.
        (Some("/p"), "/v", "/q/x", Unchanged),
        (Some("//"), "/v", "/foo", Unchanged),
    ];
    for (path, value, request, want) in rows {
        let rule = RewriteTarget::new(value, *path).expect("applied");
        let got = rule.apply(request);
        let want = match want {
            To(bytes) => PathRewrite::Rewritten(bytes.to_vec()),
            Unchanged => PathRewrite::Unchanged,
            Failed => PathRewrite::Failed,
        };
        assert_eq!(got, want, "path {path:?} value {value:?} request {request:?}");
    }
}

#[test]
fn values_the_openshift_router_does_not_apply() {
    let rows = [
        ("v2", NotApplied::NoLeadingSlash),
        (" /v2", NotApplied::NoLeadingSlash),
        ("", NotApplied::NoLeadingSlash),
        ("/v\n2", NotApplied::LineFeed),
        ("/a\nb#", NotApplied::LineFeed),
        ("/v\r2", NotApplied::BreaksConfiguration),
        ("/v\0", NotApplied::BreaksConfiguration),
    ];
    for (value, want) in rows {
        assert_eq!(RewriteTarget::new(value, Some("/p")), Err(want), "value {value:?}");
    }
}

#[test]
fn request_targets_keep_what_http_uri_can_carry() {
    let rows: &[(&[u8], Option<&str>, &str)] = &[
        (b"/v2/users", Some("id=7"), "/v2/users?id=7"),
        (b"/foofoo\"/x", None, "/foofoo\"/x"),
        (b"/{x}|~!$&'()*+,;=:@", None, "/{x}|~!$&'()*+,;=:@"),
        (b"/a b", None, "/a%20b"),
        (b"/# foo ", None, "/%23%20foo%20"),
        (b"/a?b\"c", Some("q"), "/a?b%22c?q"),
        ("/café".as_bytes(), None, "/café"),
        (b"/\xff/\x00", None, "/%FF/%00"),
    ];
    for (path, query, want) in rows {
        assert_eq!(request_target(path, *query), *want, "path {path:?}");
    }
}

/// `carried` says of each ASCII byte what `http::Uri` does with it, in the path and in the query.
#[test]
fn carried_bytes_agree_with_http_uri() {
    for byte in 0u8..0x80 {
        for (in_query, prefix) in [(false, "/a"), (true, "/a?q")] {
            let mut text = prefix.as_bytes().to_vec();
            text.extend_from_slice(&[byte, b'z']);
            let kept = PathAndQuery::try_from(text.as_slice()).is_ok_and(|pq| pq.as_str().as_bytes() == text);
            assert_eq!(carried(byte, in_query), kept, "byte {byte:#04x}, in query: {in_query}");
            let target = request_target(&text, None);
            assert!(PathAndQuery::try_from(target.as_str()).is_ok(), "byte {byte:#04x}: {target:?}");
        }
    }
}
