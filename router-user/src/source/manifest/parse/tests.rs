//! Tests of manifest parsing: documents, lists, file lines of errors, ignored kinds.

use std::path::Path;

use super::{parse_file, Parsed};
use crate::model::ObjectKey;

pub(super) fn parse(text: &str) -> Parsed {
    parse_file(Path::new("/m/test.yaml"), text)
}

pub(super) fn clean(text: &str) -> Parsed {
    let parsed = parse(text);
    assert!(parsed.errors.is_empty(), "unexpected errors: {:?}", parsed.errors);
    parsed
}

pub(super) fn key(namespace: &str, name: &str) -> ObjectKey {
    ObjectKey::new(namespace, name)
}

/// 1-based line of the first line of `text` containing `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    let index = text.lines().position(|line| line.contains(needle));
    index.expect("needle in text") + 1
}

#[test]
fn field_error_in_third_document_has_its_file_line() {
    let text = concat!(
        "---\n",
        "apiVersion: v1\n",
        "kind: Service\n",
        "metadata: {name: a}\n",
        "---\n",
        "# second\n",
        "apiVersion: v1\n",
        "kind: Service\n",
        "metadata:\n",
        "  name: b\n",
        "---\n",
        "apiVersion: v1\n",
        "kind: Service\n",
        "metadata:\n",
        "  name: c\n",
        "spec:\n",
        "  ports:\n",
        "  - port: eighty\n",
    );
    let parsed = parse(text);
    assert_eq!(parsed.errors.len(), 1, "{:?}", parsed.errors);
    let error = &parsed.errors[0];
    assert_eq!(error.path, Path::new("/m/test.yaml"));
    assert_eq!(error.line, Some(18));
    assert_eq!(error.line, Some(line_of(text, "port: eighty")));
    assert!(error.reason.starts_with("spec.ports[0].port: "), "{}", error.reason);
    assert!(!error.reason.contains("line"), "{}", error.reason);
    assert_eq!(error.to_string(), format!("/m/test.yaml:18: {}", error.reason));
    let names: Vec<_> = parsed.objects.services.keys().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
}

#[test]
fn a_field_error_has_the_fields_own_line_and_a_missing_field_its_mappings() {
    let text = concat!(
        "apiVersion: v1\n",
        "kind: Service\n",
        "metadata:\n",
        "  name: a\n",
        "spec:\n",
        "  ports:\n",
        "  - name: http\n",
        "    protocol: TCP\n",
        "    port: eighty\n",
        "---\n",
        "apiVersion: route.openshift.io/v1\n",
        "kind: Route\n",
        "metadata:\n",
        "  name: r\n",
        "spec:\n",
        "  host: a.example.com\n",
    );
    let parsed = parse(text);
    let got: Vec<_> = parsed.errors.iter().map(|e| (e.line, e.reason.as_str())).collect();
    let want = [
        (Some(9), "spec.ports[0].port: invalid type: string \"eighty\", expected i32"),
        (Some(16), "spec: missing field `to`"),
    ];
    assert_eq!(got, want);
}

#[test]
fn syntax_error_in_third_document_has_its_file_line() {
    let text = concat!(
        "apiVersion: v1\n",
        "kind: Namespace\n",
        "metadata: {name: a}\n",
        "---\n",
        "---\n",
        "apiVersion: v1\n",
        "kind: Service\n",
        "metadata:\n",
        "  name: [c\n",
        "  x: 1\n",
    );
    let parsed = parse(text);
    assert_eq!(parsed.errors.len(), 1, "{:?}", parsed.errors);
    // The reader reports where it gave up: the line after the unclosed `[`.
    assert_eq!(parsed.errors[0].line, Some(10), "{}", parsed.errors[0]);
    assert!(parsed.objects.namespaces.contains_key("a"));
}

#[test]
fn bare_carriage_returns_end_lines_as_yaml_says() {
    // Found by the manifest fuzz target: the YAML reader counts a lone CR as a line break, the document
    // splitter did not, so errors named lines past the end of the file and `---` after a CR split nothing.
    let text = "apiVersion: v1\rkind: Namespace\rmetadata: {name: a}\r---\rapiVersion: v1\rkind: Service\r\
                metadata:\r  name: [c\r  x: 1\r";
    let parsed = parse(text);
    assert!(parsed.objects.namespaces.contains_key("a"), "{:?}", parsed.errors);
    assert_eq!(parsed.errors.len(), 1, "{:?}", parsed.errors);
    // The line after the unclosed `[`, as with line feeds.
    assert_eq!(parsed.errors[0].line, Some(9), "{}", parsed.errors[0]);
}

#[test]
fn a_directive_on_the_last_line_adds_no_line() {
    // Found by the manifest fuzz target: the blanked directive line gained a line break it did not have, so an
    // error at the end of the document named a line past the end of the file.
    let parsed = parse("?\t# a key without a value\n%TAG ! tag:example.com,2000:");
    assert_eq!(parsed.errors.len(), 1, "{:?}", parsed.errors);
    assert_eq!(parsed.errors[0].line, Some(2), "{}", parsed.errors[0]);
}

#[test]
fn typed_list_items_may_omit_kind() {
    let text = concat!(
        "apiVersion: route.openshift.io/v1\n",
        "kind: RouteList\n",
        "items:\n",
        "- metadata: {name: a, namespace: x}\n",
        "  spec: {to: {kind: Service, name: a}}\n",
    );
    assert!(clean(text).objects.routes.contains_key(&key("x", "a")));
    let empty = clean("apiVersion: v1\nkind: ServiceList\nitems: []\n");
    assert!(empty.objects.services.is_empty());
}

#[test]
fn list_item_errors_point_at_the_field_or_the_item() {
    let text = concat!(
        "apiVersion: v1\n",
        "kind: List\n",
        "items:\n",
        "- apiVersion: v1\n",
        "  kind: Service\n",
        "  metadata: {name: ok}\n",
        "- apiVersion: v1\n",
        "  kind: Service\n",
        "  metadata:\n",
        "    name: bad\n",
        "  spec:\n",
        "    ports:\n",
        "    - port: x\n",
        "- apiVersion: v1\n",
        "  kind: Service\n",
        "  metadata: {namespace: n}\n",
    );
    let parsed = parse(text);
    assert_eq!(parsed.errors.len(), 2, "{:?}", parsed.errors);
    assert_eq!(parsed.errors[0].line, Some(line_of(text, "port: x")));
    assert!(parsed.errors[0].reason.starts_with("items[1].spec"), "{}", parsed.errors[0]);
    // The item without a name is reported at the item's first line.
    assert_eq!(parsed.errors[1].line, Some(14));
    assert_eq!(parsed.errors[1].reason, "items[2]: metadata.name is required");
    let keys: Vec<_> = parsed.objects.services.keys().collect();
    assert_eq!(keys, [&key("default", "ok")]);
}

#[test]
fn json_is_yaml() {
    let text = r#"{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "j", "namespace": "n"}}"#;
    assert!(clean(text).objects.services.contains_key(&key("n", "j")));
}

#[test]
fn unknown_kinds_are_ignored() {
    let text = concat!(
        "apiVersion: apps/v1\n",
        "kind: Deployment\n",
        "metadata: {name: d}\n",
        "---\n",
        "apiVersion: v1\n",
        "kind: LimitRange\n",
        "spec: {limits: []}\n",
        "---\n",
        "apiVersion: v2\n",
        "kind: Service\n",
    );
    let parsed = clean(text);
    assert!(parsed.objects.services.is_empty() && parsed.objects.routes.is_empty());
}

#[test]
fn missing_name_is_an_error_at_the_object() {
    let text = concat!(
        "apiVersion: v1\n",
        "kind: Secret\n",
        "metadata: {name: s}\n",
        "---\n",
        "\n",
        "# comment\n",
        "apiVersion: v1\n",
        "kind: Secret\n",
        "metadata:\n",
        "  namespace: x\n",
    );
    let parsed = parse(text);
    assert_eq!(parsed.errors.len(), 1);
    assert_eq!(parsed.errors[0].line, Some(7));
    assert_eq!(parsed.errors[0].reason, "metadata.name is required");
    assert_eq!(parsed.objects.secrets.len(), 1);
}

#[test]
fn missing_kind_and_non_objects_are_errors() {
    let parsed = parse("metadata: {name: a}\n---\njust a string\n---\n- a\n- b\n");
    let got: Vec<_> = parsed.errors.iter().map(|e| (e.line, e.reason.as_str())).collect();
    let not_object = "not a Kubernetes object: expected a mapping with apiVersion and kind";
    let want = [(Some(1), "missing apiVersion or kind"), (Some(3), not_object), (Some(5), not_object)];
    assert_eq!(got, want);
}

#[test]
fn secret_string_data_is_folded_into_data() {
    let text = concat!(
        "apiVersion: v1\n",
        "kind: Secret\n",
        "metadata: {name: tls, namespace: shop}\n",
        "type: kubernetes.io/tls\n",
        "data: {tls.key: a2V5}\n",
        "stringData: {tls.crt: cert}\n",
    );
    let parsed = clean(text);
    let secret = &parsed.objects.secrets[&key("shop", "tls")];
    assert_eq!(secret.string_data, None);
    let data = secret.data.as_ref().expect("data");
    assert_eq!(data["tls.crt"].0, b"cert");
    assert_eq!(data["tls.key"].0, b"key");
}

#[test]
fn a_file_read_on_several_threads_keeps_file_order_for_redefinitions_and_errors() {
    // More documents than one thread reads alone, so the runs go to every core this machine has.
    let count = 3 * super::DOCUMENTS_PER_THREAD;
    let service = |name: &str, port: u32| {
        format!("apiVersion: v1\nkind: Service\nmetadata: {{name: {name}, namespace: ns}}\nspec: {{ports: [{{port: {port}}}]}}\n")
    };
    let mut docs: Vec<String> = (0..count).map(|i| service(&format!("s{i}"), 80)).collect();
    docs[0] = service("twice", 1);
    docs[count - 1] = service("twice", 2);
    docs[3] = "apiVersion: v1\nkind: Service\nmetadata: {namespace: ns}\n".to_owned();
    docs[count - 3] = "apiVersion: v1\nkind: Service\nmetadata: [unclosed\n".to_owned();
    let text = docs.iter().map(|doc| format!("---\n{doc}")).collect::<String>();
    let parsed = parse(&text);
    let port = |name: &str| parsed.objects.services[&key("ns", name)].ports.first().map(|p| p.port);
    assert_eq!(port("twice"), Some(2), "the later definition wins across runs");
    assert_eq!(parsed.objects.services.len(), count - 3, "all but the two broken ones, and `twice` once");
    let lines: Vec<Option<usize>> = parsed.errors.iter().map(|error| error.line).collect();
    let first_broken = line_of(&text, "metadata: {namespace: ns}");
    let last_broken = line_of(&text, "metadata: [unclosed");
    assert_eq!(parsed.errors.len(), 2, "{:?}", parsed.errors);
    assert!(lines[0].is_some_and(|line| line >= first_broken - 3 && line <= first_broken), "{lines:?}");
    assert!(lines[1].is_some_and(|line| line >= last_broken && line <= last_broken + 1), "{lines:?} vs {last_broken}");
}

#[test]
fn kubectls_last_applied_copy_is_dropped_and_other_annotations_kept() {
    let text = concat!(
        "apiVersion: route.openshift.io/v1\n",
        "kind: Route\n",
        "metadata:\n",
        "  name: web\n",
        "  namespace: shop\n",
        "  annotations:\n",
        "    haproxy.router.openshift.io/timeout: 5s\n",
        "    kubectl.kubernetes.io/last-applied-configuration: |\n",
        "      {\"apiVersion\":\"route.openshift.io/v1\",\"kind\":\"Route\"}\n",
        "spec:\n",
        "  to:\n",
        "    name: web\n",
    );
    let parsed = clean(text);
    let route = parsed.objects.routes.get(&key("shop", "web")).expect("the route");
    let annotations = route.metadata.annotations.as_ref().expect("annotations");
    assert_eq!(annotations.keys().collect::<Vec<_>>(), ["haproxy.router.openshift.io/timeout"]);
}

#[test]
fn config_maps_are_read_with_their_data() {
    let text = concat!(
        "apiVersion: v1\n",
        "kind: ConfigMap\n",
        "metadata:\n",
        "  name: clients\n",
        "  namespace: shop\n",
        "data:\n",
        "  ca-bundle.pem: |\n",
        "    -----BEGIN CERTIFICATE-----\n",
        "    AAAA\n",
        "    -----END CERTIFICATE-----\n",
    );
    let parsed = clean(text);
    let config_map = &parsed.objects.config_maps[&key("shop", "clients")];
    let data = config_map.data.as_ref().expect("data");
    assert_eq!(data["ca-bundle.pem"], "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
}
