//! Settings of what the router does to HTTP messages beyond routing: response compression
//! (ROUTER_ENABLE_COMPRESSION, ROUTER_COMPRESSION_MIME) and the case of header names on HTTP/1
//! (ROUTER_H1_CASE_ADJUST), with OpenShift's names, defaults and parsing.

use std::sync::Arc;

use clap::Args;

use super::RoutingError;
use crate::proxy::{ResponseCompression, DEFAULT_COMPRESSION_MIME};

#[derive(Args, Clone, Debug)]
pub struct HttpArgs {
    /// Gzip responses of the --compression-mime types for clients that accept it (Go's `strconv.ParseBool`
    /// words, as OpenShift's template reads it: `true`, `1`, `t`, `TRUE`...; anything else is off).
    #[arg(long, env = "ROUTER_ENABLE_COMPRESSION", default_value = "false", value_parser = go_is_true, action = clap::ArgAction::Set)]
    pub enable_compression: bool,

    /// MIME types to compress, separated by spaces; a response's Content-Type matches when it starts with one.
    #[arg(long, env = "ROUTER_COMPRESSION_MIME", default_value = DEFAULT_COMPRESSION_MIME)]
    pub compression_mime: String,
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
}
