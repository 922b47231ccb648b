use serde_json::{json, Value};

use super::read;
use crate::source::manifest::{document, yaml};

/// What the full reader makes of `text`, or `None` where it fails.
fn full(text: &str) -> Option<Value> {
    yaml::from_str::<Value>(text).ok()
}

/// The fast reader answers `text`, with the full reader's value.
#[track_caller]
fn answers(text: &str) -> Value {
    let fast = read(text).unwrap_or_else(|| panic!("the fast reader left this to the full reader:\n{text}"));
    assert_eq!(Some(&fast), full(text).as_ref(), "the readers disagree on:\n{text}");
    fast
}

/// The fast reader either leaves `text` to the full reader or agrees with it.
#[track_caller]
fn never_contradicts(text: &str) {
    if let Some(fast) = read(text) {
        assert_eq!(Some(fast), full(text), "the fast reader answered what the full reader reads otherwise:\n{text}");
    }
}

#[test]
fn reads_what_oc_get_prints() {
    let route = "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: web\n  namespace: shop\n  \
                 annotations:\n    haproxy.router.openshift.io/timeout: 5s\n    haproxy.router.openshift.io/balance: \
                 roundrobin\n  labels: {}\nspec:\n  host: web.example.com\n  path: /api\n  port:\n    targetPort: \
                 8080\n  to:\n    kind: Service\n    name: web\n    weight: 100\n  tls:\n    termination: edge\n    \
                 key: |-\n      -----BEGIN KEY-----\n      abc\n      -----END KEY-----\n  wildcardPolicy: None\n";
    let value = answers(route);
    assert_eq!(value["spec"]["port"]["targetPort"], json!(8080));
    assert_eq!(value["spec"]["tls"]["key"], json!("-----BEGIN KEY-----\nabc\n-----END KEY-----"));
    assert_eq!(value["metadata"]["labels"], json!({}));
}

#[test]
fn reads_sequences_of_mappings_at_the_keys_column_and_indented() {
    let slice = "addressType: IPv4\nports:\n- name: http\n  port: 8080\nendpoints:\n  - addresses:\n      - \
                 10.128.2.15\n      - \"127.0.0.11\"\n    conditions:\n      ready: true\n  -\n    addresses: []\n  - \
                 - nested\n    - twice\n";
    let value = answers(slice);
    assert_eq!(value["endpoints"][0]["addresses"], json!(["10.128.2.15", "127.0.0.11"]));
    assert_eq!(value["endpoints"][2], json!(["nested", "twice"]));
    assert_eq!(value["ports"][0]["port"], json!(8080));
}

#[test]
fn reads_literal_blocks_with_their_chomping_and_inner_indentation() {
    let value = answers("a: |\n  one\n\n    two\n  three\nb: |-\n  x\n\n\nc: end\n");
    assert_eq!(value["a"], json!("one\n\n  two\nthree\n"));
    assert_eq!(value["b"], json!("x"));
    answers("- |\n  in a sequence\n- next\n");
    answers("k: |\n  trailing spaces   \n  kept\n");
}

#[test]
fn reads_quoted_scalars_and_comment_lines() {
    let value = answers("# head\na: 'it''s'\n  # indented comment\nb: \"tab\\tand \\\"quote\\\" \\u00e9\"\nc: ''\n");
    assert_eq!(value["a"], json!("it's"));
    assert_eq!(value["b"], json!("tab\tand \"quote\" é"));
}

#[test]
fn leaves_everything_outside_its_subset_to_the_full_reader() {
    for text in [
        "a: &anchor 1\nb: *anchor\n",
        "a: !!str 1\n",
        "a: [1, 2]\n",
        "a: {b: c}\n",
        "a: >\n  folded\n",
        "a: |+\n  kept\n\n",
        "a: |2\n   indicator\n",
        "a: plain\n  continued\n",
        "a: 1 # comment\n",
        "a:\tb\n",
        "a: b\r\n",
        "# a comment with a DEL \u{7f}\na: b\n",
        "a: b\u{85}c\n",
        "a: b\u{feff}\n",
        "? complex\n: key\n",
        "\"quoted\": key\n",
        "<<: {a: 1}\n",
        "a: 'multi\n  line'\n",
        "a: \"multi\n  line\"\n",
        "a: yes\n",
        "a: True\n",
        "a: 010\n",
        "a: 1_000\n",
        "a: 1.5\n",
        "a: .inf\n",
        "a: 0x1F\n",
        "a: 0b1\n",
        "a: -0\n",
        "a: 99999999999999999999\n",
        "a: b: c\n",
        "a: -\n",
        "   a: b\n",
        "1: one\n",
        "just a scalar\n",
        "a: b\na: c\n",
    ] {
        assert_eq!(read(text), None, "the fast reader took:\n{text}");
        never_contradicts(text);
    }
}

#[test]
fn plain_scalars_are_typed_as_the_full_reader_types_them() {
    for scalar in [
        "0",
        "7",
        "-12",
        "9223372036854775807",
        "true",
        "false",
        "null",
        "~",
        "5s",
        "127.0.0.1",
        "1.2.3",
        "1e",
        "e3",
        ".foo",
        "-foo",
        "a-b",
        "x#y",
        "http://a:80/b",
        "TRUE",
        "Null",
        "on",
        "off",
        "y",
        "n",
        "NaN",
        "0o7",
        "0b1",
        "1:2",
        "a,b",
        "[x",
        "2024-01-01T00:00:00Z",
        "+1",
        "+x",
        "-.5",
        "1.",
        ".5",
        "1e3",
        "1E-3",
        "0.0.0.0/0",
        "12:30",
        "1:20:00",
        "0B1",
        "0X1f",
        "100ms",
        "1h30m",
        "1-2",
        "3/4",
        "+.inf",
        "-Infinity",
        "1_0",
        "0.",
        "00",
    ] {
        never_contradicts(&format!("a: {scalar}\n"));
        never_contradicts(&format!("- {scalar}\n"));
    }
}

#[test]
fn agrees_with_the_full_reader_on_every_fixture_document() {
    let fixtures = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/src/source/manifest/testdata"))
        .expect("testdata")
        .map(|entry| entry.expect("entry").path());
    let mut answered = 0;
    for path in fixtures {
        let text = std::fs::read_to_string(&path).expect("fixture");
        for doc in document::split(&text) {
            never_contradicts(&doc.text);
            answered += usize::from(read(&doc.text).is_some());
        }
    }
    assert!(answered >= 5, "the fast reader answered only {answered} fixture documents");
}

#[test]
fn names_the_top_level_api_version_and_kind_only() {
    let json = super::to_json("apiVersion: route.openshift.io/v1\nkind: Route\nspec:\n  to:\n    kind: Service\n")
        .expect("a plain document");
    assert_eq!((json.api_version.as_str(), json.kind.as_str()), ("route.openshift.io/v1", "Route"));
    let json = super::to_json("metadata:\n  kind: Nested\n").expect("a plain document");
    assert_eq!((json.api_version.as_str(), json.kind.as_str()), ("", ""));
}
