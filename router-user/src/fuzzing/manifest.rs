//! A manifest file (`--manifests`): its YAML or JSON documents read into objects, then everything the router
//! derives from them (Ingresses and Gateway API routes made routes, admission, the compiled route table), as a
//! file change does.

use std::path::Path;

use crate::model::{add_gateway_routes, add_ingress_routes};
use crate::source::manifest::block_yaml::answers_beside_full_reader;
use crate::source::manifest::parse::parse_file;
use crate::table::{build, BuildOptions};

/// The `ROUTER_GATEWAY_CLASS` the fuzzed files are read with.
const FUZZ_GATEWAY_CLASS: &str = "fuzz";

/// Any file: errors name a line of the file, whatever objects it held compile into a table, and every
/// document the fast block reader answers reads the same with the full YAML reader.
pub fn manifest(data: &[u8]) {
    // The source reports a file that is not UTF-8 without parsing it.
    let Ok(text) = std::str::from_utf8(data) else { return };
    for (fast, full) in answers_beside_full_reader(text) {
        assert_eq!(Some(&fast), full.as_ref(), "the fast block reader contradicts the full YAML reader");
    }
    let path = Path::new("/manifests/fuzz.yaml");
    let mut parsed = parse_file(path, text);
    // YAML's line breaks: `\r\n`, `\n` and a lone `\r`.
    let lines = text.replace("\r\n", "\n").matches(['\n', '\r']).count() + 1;
    for error in &parsed.errors {
        let line = error.line.unwrap_or(1);
        assert!((1..=lines).contains(&line), "{error} in a file of {lines} lines");
    }
    add_ingress_routes(&mut parsed.objects);
    // Gateways of class `fuzz` are served (the seed `gateway_api.yaml` has one).
    add_gateway_routes(&mut parsed.objects, FUZZ_GATEWAY_CLASS);
    build(&parsed.objects, &BuildOptions::default(), 1);
}
