//! Access-log settings, with the OpenShift router's variable names and defaults: the `log` line's address,
//! `len` (ROUTER_LOG_MAX_LENGTH, 1024), facility (local1) and level (warning: access lines go at `info`, so
//! none are sent until ROUTER_LOG_LEVEL is `info` or `debug`), ROUTER_SYSLOG_FORMAT, the captures,
//! dontlognull, http-ignore-probes and the unique request id.

use clap::Args;
use http::HeaderName;

use crate::access_log::{
    self, parse_cookie_capture, parse_header_captures, AccessLogOptions, CaptureError, Destination, DestinationError,
    Facility, FormatError, Framing, LogFormat, Severity, SyslogHeader, UniqueId, ACCESS_SEVERITY,
};

#[derive(Args, Clone, Debug)]
pub struct AccessLogArgs {
    /// Where access-log lines go: a UDP host:port, a unix datagram socket path, `stdout` or `stderr`. Unset: no
    /// access log.
    #[arg(long, env = "ROUTER_SYSLOG_ADDRESS")]
    pub syslog_address: Option<String>,

    /// Highest syslog level sent (emerg alert crit err warning notice info debug); access lines are `info`.
    #[arg(long, env = "ROUTER_LOG_LEVEL", default_value = "warning")]
    pub log_level: String,

    /// Syslog facility of the lines.
    #[arg(long, env = "ROUTER_LOG_FACILITY", default_value = "local1")]
    pub log_facility: String,

    /// Longest syslog message in bytes, header included; longer ones are cut.
    #[arg(long, env = "ROUTER_LOG_MAX_LENGTH", default_value_t = 1024)]
    pub log_max_length: usize,

    /// HAProxy log-format of HTTP lines (as written in a HAProxy configuration); unset: `option httplog`'s.
    #[arg(long, env = "ROUTER_SYSLOG_FORMAT")]
    pub syslog_format: Option<String>,

    /// Syslog framing: rfc3164 (HAProxy's default), rfc5424, or raw (the bare line).
    #[arg(long, env = "ROUTER_SYSLOG_FRAMING", value_enum, default_value_t = Framing::Rfc3164)]
    pub syslog_framing: Framing,

    /// The program name in syslog headers.
    #[arg(long, env = "ROUTER_SYSLOG_TAG", default_value = "router")]
    pub syslog_tag: String,

    /// Request headers logged in `%hr`: `name:maxLength`, comma separated.
    #[arg(long, env = "ROUTER_CAPTURE_HTTP_REQUEST_HEADERS", default_value = "")]
    pub capture_http_request_headers: String,

    /// Response headers logged in `%hs`: `name:maxLength`, comma separated.
    #[arg(long, env = "ROUTER_CAPTURE_HTTP_RESPONSE_HEADERS", default_value = "")]
    pub capture_http_response_headers: String,

    /// Cookie logged in `%CC` / `%CS`: `name:maxLength` (prefix match) or `name=:maxLength` (exact).
    #[arg(long, env = "ROUTER_CAPTURE_HTTP_COOKIE", default_value = "")]
    pub capture_http_cookie: String,

    /// Do not log connections that sent nothing (`option dontlognull`); they still get the 408.
    #[arg(long, env = "ROUTER_DONT_LOG_NULL")]
    pub dont_log_null: bool,

    /// Connections that sent nothing get no 408 when the request timeout passes, and no line, nor when they close
    /// (`option http-ignore-probes`).
    #[arg(long, env = "ROUTER_HTTP_IGNORE_PROBES")]
    pub http_ignore_probes: bool,

    /// Header carrying each request's unique id to the pod (with --unique-id-format).
    #[arg(long, env = "ROUTER_UNIQUE_ID_HEADER_NAME")]
    pub unique_id_header_name: Option<String>,

    /// HAProxy log-format of the unique id, e.g. `%{+X}o\ %ci:%cp_%fi:%fp_%Ts_%rt:%pid`; logged as `%ID`.
    #[arg(long, env = "ROUTER_UNIQUE_ID_FORMAT")]
    pub unique_id_format: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum AccessLogError {
    #[error("{variable} {value:?}: {why}")]
    Value { variable: &'static str, value: String, why: &'static str },
    #[error("{variable}: {source}")]
    Format { variable: &'static str, source: FormatError },
    #[error(transparent)]
    Capture(#[from] CaptureError),
    #[error(transparent)]
    Destination(#[from] DestinationError),
}

impl AccessLogArgs {
    pub fn options(&self) -> Result<AccessLogOptions, AccessLogError> {
        let level = Severity::parse(&self.log_level).ok_or_else(|| AccessLogError::Value {
            variable: "ROUTER_LOG_LEVEL",
            value: self.log_level.clone(),
            why: "expected emerg, alert, crit, err, warning, notice, info or debug",
        })?;
        let facility = Facility::parse(&self.log_facility).ok_or_else(|| AccessLogError::Value {
            variable: "ROUTER_LOG_FACILITY",
            value: self.log_facility.clone(),
            why: "expected a syslog facility name such as local0..local7, daemon or user",
        })?;
        if !(80..=65535).contains(&self.log_max_length) {
            return Err(AccessLogError::Value {
                variable: "ROUTER_LOG_MAX_LENGTH",
                value: self.log_max_length.to_string(),
                why: "expected 80 to 65535 bytes",
            });
        }
        let format = |variable, value: &str| {
            LogFormat::parse_config(value).map_err(|source| AccessLogError::Format { variable, source })
        };
        let http_format = match self.syslog_format.as_deref().filter(|f| !f.trim().is_empty()) {
            Some(custom) => format("ROUTER_SYSLOG_FORMAT", custom)?,
            None => format("ROUTER_SYSLOG_FORMAT", access_log::HTTPLOG_FORMAT)?,
        };
        let tcp_format = format("ROUTER_SYSLOG_FORMAT", access_log::TCPLOG_FORMAT)?;
        let address = self.syslog_address.as_deref().filter(|a| !a.trim().is_empty());
        // Lines go at info: with a level that stops info, nothing would ever be sent.
        let destination = match address {
            Some(address) if level >= ACCESS_SEVERITY => Some(Destination::parse(address)?),
            _ => None,
        };
        let unique_id = match (self.unique_id_header_name.as_deref(), self.unique_id_format.as_deref()) {
            (Some(name), Some(value)) if !name.is_empty() && !value.is_empty() => {
                let header = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| AccessLogError::Value {
                    variable: "ROUTER_UNIQUE_ID_HEADER_NAME",
                    value: name.to_string(),
                    why: "not a valid header name",
                })?;
                Some(UniqueId { header, format: format("ROUTER_UNIQUE_ID_FORMAT", value)? })
            }
            _ => None,
        };
        Ok(AccessLogOptions {
            destination,
            header: SyslogHeader {
                framing: self.syslog_framing,
                facility,
                hostname: access_log::hostname(),
                tag: self.syslog_tag.clone(),
                pid: std::process::id(),
                max_length: self.log_max_length,
            },
            http_format,
            tcp_format,
            request_headers: parse_header_captures(
                "ROUTER_CAPTURE_HTTP_REQUEST_HEADERS",
                &self.capture_http_request_headers,
            )?,
            response_headers: parse_header_captures(
                "ROUTER_CAPTURE_HTTP_RESPONSE_HEADERS",
                &self.capture_http_response_headers,
            )?,
            cookie: parse_cookie_capture("ROUTER_CAPTURE_HTTP_COOKIE", &self.capture_http_cookie)?,
            dont_log_null: self.dont_log_null,
            ignore_probes: self.http_ignore_probes,
            unique_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        log: AccessLogArgs,
    }

    fn options(args: &[&str]) -> Result<AccessLogOptions, AccessLogError> {
        let mut all = vec!["router"];
        all.extend_from_slice(args);
        Cli::parse_from(all).log.options()
    }

    #[test]
    fn openshift_defaults_send_no_access_lines() {
        let defaults = options(&["--syslog-address", "127.0.0.1:514"]).expect("defaults");
        assert_eq!(defaults.destination, None, "warning stops info lines");
        assert_eq!(defaults.header.max_length, 1024);
        assert_eq!(defaults.header.facility, Facility(17));
        let on = options(&["--syslog-address", "127.0.0.1:514", "--log-level", "info"]).expect("info");
        assert_eq!(on.destination, Some(Destination::Udp("127.0.0.1:514".parse().expect("addr"))));
    }

    #[test]
    fn bad_values_are_refused_with_their_variable() {
        let unknown = options(&["--syslog-format", "%ci %nope"]).expect_err("unknown variable");
        assert!(
            unknown.to_string().starts_with("ROUTER_SYSLOG_FORMAT: unknown log-format variable %nope"),
            "{unknown}"
        );
        assert!(options(&["--log-level", "loud"]).expect_err("level").to_string().contains("ROUTER_LOG_LEVEL"));
        assert!(options(&["--log-facility", "local9"]).is_err());
        assert!(options(&["--log-max-length", "10"]).is_err());
        assert!(options(&["--capture-http-cookie", "a:b:c"]).is_err());
        let id = options(&["--unique-id-header-name", "X-Request-ID", "--unique-id-format", "%{+X}o\\ %ci:%cp_%rt"])
            .expect("unique id");
        assert_eq!(id.unique_id.expect("set").header, "x-request-id");
    }
}
