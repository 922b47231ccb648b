//! Settings of what the router does to HTTP messages beyond routing: response compression
//! (ROUTER_ENABLE_COMPRESSION, ROUTER_COMPRESSION_MIME) and the case of header names on HTTP/1
//! (ROUTER_H1_CASE_ADJUST), with OpenShift's names, defaults and parsing.

use std::sync::Arc;

use clap::Args;

use super::RoutingError;
use crate::proxy::{HeaderCaseMap, ResponseCompression, DEFAULT_COMPRESSION_MIME};

#[derive(Args, Clone, Debug)]
pub struct HttpArgs {
    /// Gzip responses of the --compression-mime types for clients that accept it (Go's `strconv.ParseBool`
    /// words, as OpenShift's template reads it: `true`, `1`, `t`, `TRUE`...; anything else is off).
    #[arg(long, env = "ROUTER_ENABLE_COMPRESSION", default_value = "false", value_parser = go_is_true, action = clap::ArgAction::Set)]
    pub enable_compression: bool,

    /// MIME types to compress, separated by spaces; a response's Content-Type matches when it starts with one.
    #[arg(long, env = "ROUTER_COMPRESSION_MIME", default_value = DEFAULT_COMPRESSION_MIME)]
    pub compression_mime: String,

    /// Header names, comma separated, written in this case on HTTP/1: in responses to clients, and in requests
    /// to the pods of routes annotated `haproxy.router.openshift.io/h1-adjust-case: "true"`.
    #[arg(long, env = "ROUTER_H1_CASE_ADJUST", default_value = "")]
    pub h1_case_adjust: String,
}

impl HttpArgs {
    /// The compression policy when compression is on.
    pub fn compression(&self) -> Result<Option<Arc<ResponseCompression>>, RoutingError> {
        if !self.enable_compression {
            return Ok(None);
        }
        if self.compression_mime.trim().is_empty() {
            return Err(RoutingError::Value {
                variable: "ROUTER_COMPRESSION_MIME",
                value: self.compression_mime.clone(),
                why: "no MIME type to compress".into(),
            });
        }
        Ok(Some(Arc::new(ResponseCompression::new(&self.compression_mime))))
    }
}

impl HttpArgs {
    /// ROUTER_H1_CASE_ADJUST as a map; a name that is not an HTTP token stops the start, as in OpenShift.
    pub fn h1_case_adjust(&self) -> Result<Option<Arc<HeaderCaseMap>>, RoutingError> {
        let map = HeaderCaseMap::parse(&self.h1_case_adjust).map_err(|error| RoutingError::Value {
            variable: "ROUTER_H1_CASE_ADJUST",
            value: self.h1_case_adjust.clone(),
            why: error.to_string(),
        })?;
        Ok(map.map(Arc::new))
    }
}

/// `isTrue` of OpenShift's template: Go's `strconv.ParseBool`, an unparsable value being false.
pub fn go_is_true(value: &str) -> Result<bool, std::convert::Infallible> {
    Ok(matches!(value, "1" | "t" | "T" | "true" | "TRUE" | "True"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Only {
        #[command(flatten)]
        http: HttpArgs,
    }

    #[test]
    fn compression_is_off_by_default_and_on_for_go_true_words() {
        let parsed = Only::parse_from(["router"]);
        assert!(parsed.http.compression().expect("valid").is_none());
        assert_eq!(parsed.http.compression_mime, "text/html text/plain text/css");
        for word in ["true", "1", "t", "TRUE", "True"] {
            let parsed = Only::parse_from(["router", "--enable-compression", word]);
            assert!(parsed.http.compression().expect("valid").is_some(), "{word}");
        }
        for word in ["false", "yes", "on", "0", ""] {
            let parsed = Only::parse_from(["router", "--enable-compression", word]);
            assert!(parsed.http.compression().expect("valid").is_none(), "{word}");
        }
        let empty = Only::parse_from(["router", "--enable-compression", "true", "--compression-mime", " "]);
        assert!(empty.http.compression().is_err());
    }

    #[test]
    fn the_case_list_is_empty_by_default_and_a_bad_name_stops_the_start() {
        assert!(Only::parse_from(["router"]).http.h1_case_adjust().expect("valid").is_none());
        let listed = Only::parse_from(["router", "--h1-case-adjust", "Host,X-Request-ID"]);
        let map = listed.http.h1_case_adjust().expect("valid").expect("a map");
        assert_eq!(map.adjust(b"x-request-id"), b"X-Request-ID");
        let spaced = Only::parse_from(["router", "--h1-case-adjust", "Host, X-Request-ID"]);
        assert!(spaced.http.h1_case_adjust().is_err(), "OpenShift does not trim the names");
    }
}
