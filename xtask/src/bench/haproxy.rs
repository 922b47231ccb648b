//! The HAProxy configuration the OpenShift router would write for a `RouteSet`, generated from the facts in
//! docs/route-semantics.md (not copied from the OpenShift template):
//!
//! - `public` (HTTP): lowercase Host, drop `Proxy`, redirect map, then the backend from the host+path regex map
//!   (`base,map_reg`) or `openshift_default` (503).
//! - `public_ssl` (TCP): SNI in the passthrough map -> `be_tcp:` backend from the TCP map; other SNI -> `be_sni`
//!   -> the `fe_sni` TLS frontend over a unix socket with the PROXY protocol (the extra hop); no SNI ->
//!   `be_no_sni` -> `fe_no_sni` (default certificate only). Both TLS frontends route host+path through the
//!   edge/reencrypt map.
//! - Backends `be_http:` / `be_edge_http:` / `be_secure:` (reencrypt) / `be_tcp:` (passthrough) + `ns:name`, with
//!   the balance algorithm, the optional sticky cookie, the forwarded headers (append policy) and
//!   `server pod:<pod>:<svc>:<port name>:<ip>:<port> ... weight <w>` (1 with one service, up to 256 with several).
//!
//! Map lines are sorted reverse-lexically, so the longest path of a host comes first and `map_reg` (first match
//! wins, a linear scan) finds it. `config_excerpt` reads the start of a written configuration back for the results.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::routes::{write_atomically, BenchRoute, RouteSet, Termination};

pub const HTTP_BACKEND_MAP: &str = "os_http_be.map";
pub const EDGE_REENCRYPT_BACKEND_MAP: &str = "os_edge_reencrypt_be.map";
pub const SNI_PASSTHROUGH_MAP: &str = "os_sni_passthrough.map";
pub const TCP_BACKEND_MAP: &str = "os_tcp_be.map";
pub const HTTP_REDIRECT_MAP: &str = "os_route_http_redirect.map";
pub const CERT_LIST: &str = "cert_config.map";
pub const CONFIG_FILE: &str = "haproxy.cfg";
pub const STATS_SOCKET: &str = "haproxy.sock";
/// TLS 1.2 ciphers offered (ROUTER_CIPHERS' intermediate profile, ECDHE + AES-GCM).
const TLS12_CIPHERS: &str =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384";

/// Where the configuration lives and what it binds.
#[derive(Clone, Debug)]
pub struct Layout {
    /// Directory of the config, maps, certificates and unix sockets.
    pub dir: PathBuf,
    pub listen: Ipv4Addr,
    pub http_port: u16,
    pub https_port: u16,
    /// PEM file holding the default certificate and its key.
    pub default_certificate: PathBuf,
}

impl Layout {
    pub fn config_path(&self) -> PathBuf {
        self.dir.join(CONFIG_FILE)
    }

    pub fn stats_socket(&self) -> PathBuf {
        self.dir.join(STATS_SOCKET)
    }

    fn file(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }
}

/// Choices the OpenShift router makes from annotations and environment variables.
#[derive(Clone, Debug)]
pub struct Options {
    /// Insert the sticky cookie (`cookie ... insert indirect nocache httponly`); off = `disable_cookies` on every
    /// route.
    pub cookies: bool,
    /// `check inter 5000ms` on servers of backends with more than one endpoint.
    pub health_checks: bool,
    /// `nbthread` (ROUTER_THREADS).
    pub threads: u32,
    /// Balance algorithm of HTTP backends with one service (ROUTER_LOAD_BALANCE_ALGORITHM, default `random`).
    pub http_balance: &'static str,
    /// Offer h2 by ALPN on routes with their own certificate (not ROUTER_DISABLE_HTTP2).
    pub http2: bool,
    /// `maxconn` (ROUTER_MAX_CONNECTIONS, default 50000; HAProxy needs about 2 file descriptors per connection).
    pub maxconn: u32,
    /// TLS session resumption for clients (OpenShift's default). Off: `no-tls-tickets` and no session cache, so
    /// every connection is a full handshake (the bench's full-handshake scenario).
    pub tls_resumption: bool,
    /// ROUTER_SYSLOG_ADDRESS with ROUTER_LOG_LEVEL=info: the `log` line OpenShift's template writes (`len 1024`,
    /// facility local1), `log-send-hostname`, and `option httplog` with `log global` in the defaults.
    pub syslog: Option<SocketAddr>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            cookies: true,
            health_checks: true,
            threads: 4,
            http_balance: "random",
            http2: true,
            maxconn: 50_000,
            tls_resumption: true,
            syslog: None,
        }
    }
}

/// Everything `write` puts in the layout directory, as text.
pub struct Rendered {
    pub config: String,
    /// (file name, contents) of the map files and the certificate list.
    pub maps: Vec<(&'static str, String)>,
    /// (path relative to the layout directory, PEM contents) of route certificates and destination CAs.
    pub files: Vec<(String, String)>,
}

/// Renders and writes the whole configuration (maps and certificates first, the config file last, each by
/// rename); returns the config file's path.
pub fn write(set: &RouteSet, layout: &Layout, options: &Options) -> anyhow::Result<PathBuf> {
    let rendered = render(set, layout, options);
    for sub in ["certs", "cacerts", "run"] {
        std::fs::create_dir_all(layout.dir.join(sub)).with_context(|| format!("creating {sub} in the layout"))?;
    }
    for (name, contents) in &rendered.files {
        let path = layout.dir.join(name);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(contents.as_str()) {
            write_atomically(&path, contents)?;
        }
    }
    for (name, contents) in &rendered.maps {
        write_atomically(&layout.dir.join(name), contents)?;
    }
    let config = layout.config_path();
    write_atomically(&config, &rendered.config)?;
    Ok(config)
}

pub fn render(set: &RouteSet, layout: &Layout, options: &Options) -> Rendered {
    let mut maps = Maps::default();
    let mut files = Vec::new();
    let mut backends = String::with_capacity(set.routes.len() * 1300);
    for route in &set.routes {
        let regex = route_regex(&route.host, &route.path);
        let backend = backend_name(route);
        match route.termination {
            Termination::Http => maps.http.push(format!("{regex} {backend}")),
            Termination::Edge | Termination::Reencrypt => {
                maps.edge_reencrypt.push(format!("{regex} {backend}"));
                if let Some(tls) = &route.certificates {
                    let cert_file = format!("certs/{}.pem", route.key());
                    // As the OpenShift router writes it: certificate, key, then the CA certificate.
                    let ca = tls.ca_certificate.as_deref().map_or(String::new(), |ca| format!("{}\n", ca.trim()));
                    let pem = format!("{}\n{}\n{ca}", tls.certificate.trim(), tls.key.trim());
                    files.push((cert_file.clone(), pem));
                    let alpn = if options.http2 { " [alpn h2,http/1.1]" } else { "" };
                    maps.certs.push(format!("{}{alpn} {}", layout.file(&cert_file), route.host));
                }
            }
            Termination::Passthrough => {
                let sni = format!("^{}$", regex_quote(&route.host));
                maps.sni_passthrough.push(format!("{sni} 1"));
                maps.tcp.push(format!("{sni} {backend}"));
            }
        }
        if route.termination == Termination::Reencrypt {
            if let Some(ca) = route.certificates.as_ref().and_then(|tls| tls.destination_ca.as_ref()) {
                files.push((format!("cacerts/{}.pem", route.key()), ca.clone()));
            }
        }
        push_backend(&mut backends, route, layout, options);
    }

    let mut config = String::with_capacity(backends.len() + 8192);
    push_global(&mut config, layout, options);
    push_frontends(&mut config, layout);
    config.push_str(&backends);
    Rendered { config, maps: maps.into_files(), files }
}

/// The start of a generated HAProxy config (frontends and the first backend) and of its HTTP map, for the results.
pub fn config_excerpt(dir: &Path) -> String {
    let config = std::fs::read_to_string(dir.join(CONFIG_FILE)).unwrap_or_default();
    let mut out = String::new();
    let mut backends = 0;
    for line in config.lines() {
        if line.starts_with("backend be_")
            && !line.starts_with("backend be_sni")
            && !line.starts_with("backend be_no_sni")
        {
            backends += 1;
            if backends > 1 {
                out.push_str("# ... one backend per route\n");
                break;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    let map = std::fs::read_to_string(dir.join(HTTP_BACKEND_MAP)).unwrap_or_default();
    let _ = writeln!(out, "\n# {HTTP_BACKEND_MAP}:");
    for line in map.lines().take(3) {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("# ...\n");
    out
}

#[derive(Default)]
struct Maps {
    http: Vec<String>,
    edge_reencrypt: Vec<String>,
    sni_passthrough: Vec<String>,
    tcp: Vec<String>,
    redirect: Vec<String>,
    certs: Vec<String>,
}

impl Maps {
    fn into_files(self) -> Vec<(&'static str, String)> {
        let sorted = |mut lines: Vec<String>| {
            // Reverse-lexical: /a/b before /a before the bare host, so the first regex match is the longest path.
            lines.sort_unstable_by(|a, b| b.cmp(a));
            let mut text = lines.join("\n");
            text.push('\n');
            text
        };
        vec![
            (HTTP_BACKEND_MAP, sorted(self.http)),
            (EDGE_REENCRYPT_BACKEND_MAP, sorted(self.edge_reencrypt)),
            (SNI_PASSTHROUGH_MAP, sorted(self.sni_passthrough)),
            (TCP_BACKEND_MAP, sorted(self.tcp)),
            (HTTP_REDIRECT_MAP, sorted(self.redirect)),
            (CERT_LIST, sorted(self.certs)),
        ]
    }
}

/// `be_http:ns:name` and friends.
pub fn backend_name(route: &BenchRoute) -> String {
    let prefix = match route.termination {
        Termination::Http => "be_http",
        Termination::Edge => "be_edge_http",
        Termination::Reencrypt => "be_secure",
        Termination::Passthrough => "be_tcp",
    };
    format!("{prefix}:{}", route.key())
}

/// The host+path regex the maps match `base` (Host + path, no query) against: an optional trailing dot and port
/// after the host; a path matches itself and anything below it on a segment boundary (`/sub` matches `/sub`,
/// `/sub/`, `/sub/x`, not `/subpar`; `/sub/` needs the slash).
pub fn route_regex(host: &str, path: &str) -> String {
    let host = regex_quote(&host.to_ascii_lowercase());
    let path = match path {
        "" | "/" => "(/.*)?".to_string(),
        p if p.ends_with('/') => format!("{}.*", regex_quote(p)),
        p => format!("{}(/.*)?", regex_quote(p)),
    };
    format!("^{host}\\.?(:[0-9]+)?{path}$")
}

fn regex_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A stable 32-hex-digit id, standing in for the md5 hex the OpenShift router uses for cookie names and values
/// (same length on the wire; the bench needs no cryptographic hash).
fn opaque_id(text: &str) -> String {
    let fnv =
        |seed: u64| text.bytes().fold(seed, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3));
    format!("{:016x}{:016x}", fnv(0xcbf2_9ce4_8422_2325), fnv(0x6c62_272e_07bb_0142))
}

fn push_global(out: &mut String, layout: &Layout, options: &Options) {
    let _ = write!(
        out,
        "# Generated by `cargo xtask bench` from the bench route set: the configuration the OpenShift router
# would write for it (see xtask/src/bench/haproxy.rs). Do not edit.
global
  nbthread {threads}
  maxconn {maxconn}
  stats socket {socket} mode 600 level admin expose-fd listeners
  stats timeout 2m
  tune.bufsize 32768
  tune.maxrewrite 8192
  ssl-default-bind-options ssl-min-ver TLSv1.2{no_tickets}
  ssl-default-bind-ciphersuites TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256
  ssl-default-bind-ciphers {ciphers}
{log_global}
defaults
  maxconn {maxconn}
{log_defaults}  timeout connect 5s
  timeout client 30s
  timeout client-fin 1s
  timeout server 30s
  timeout server-fin 1s
  timeout http-request 10s
  timeout http-keep-alive 300s
  timeout tunnel 1h

",
        threads = options.threads,
        maxconn = options.maxconn,
        ciphers = TLS12_CIPHERS,
        no_tickets = if options.tls_resumption { "" } else { " no-tls-tickets\n  tune.ssl.cachesize 0" },
        socket = layout.stats_socket().display(),
        log_global = options
            .syslog
            .map_or(String::new(), |addr| format!("  log {addr} len 1024 local1 info\n  log-send-hostname\n")),
        log_defaults = if options.syslog.is_some() { "  option httplog\n  log global\n" } else { "" },
    );
}

/// The HTTP request rules the HTTP-mode frontends share, the redirect of `Redirect` routes (plain HTTP only), then
/// routing through `map`.
fn push_http_routing(out: &mut String, layout: &Layout, map: &str, redirect: bool) {
    out.push_str(
        "  # an empty Content-Length is refused; Proxy (httpoxy) never reaches a pod; Host is compared lowercased
  http-request deny deny_status 400 if { req.hdr_cnt(content-length) gt 0 } { req.hdr(content-length) -m len 0 }
  http-request del-header Proxy
  http-request set-header Host %[req.hdr(Host),lower]
",
    );
    if redirect {
        let _ = write!(
            out,
            "  # routes with insecureEdgeTerminationPolicy Redirect answer 302 to https
  acl secure_redirect base,map_reg_int({}) -m bool
  redirect scheme https if secure_redirect
",
            layout.file(HTTP_REDIRECT_MAP)
        );
    }
    let _ = write!(
        out,
        "  use_backend %[base,map_reg({})]
  default_backend openshift_default

",
        layout.file(map)
    );
}

fn push_frontends(out: &mut String, layout: &Layout) {
    let run = layout.dir.join("run");
    let fe_sni = run.join("fe_sni.sock");
    let fe_no_sni = run.join("fe_no_sni.sock");
    let _ = write!(
        out,
        "frontend public
  bind {listen}:{http_port}
  mode http
  tcp-request inspect-delay 5s
  tcp-request content accept if HTTP
  monitor-uri /_______internal_router_healthz
",
        listen = layout.listen,
        http_port = layout.http_port,
    );
    push_http_routing(out, layout, HTTP_BACKEND_MAP, true);

    let _ = write!(
        out,
        "frontend public_ssl
  bind {listen}:{https_port}
  mode tcp
  tcp-request inspect-delay 5s
  tcp-request content accept if {{ req_ssl_hello_type 1 }}
  acl sni req.ssl_sni -m found
  acl sni_passthrough req.ssl_sni,lower,map_reg({sni_map}) -m found
  use_backend %[req.ssl_sni,lower,map_reg({tcp_map})] if sni sni_passthrough
  use_backend be_sni if sni
  default_backend be_no_sni

# TLS with SNI that is not passthrough loops back into fe_sni (terminated there): one more hop per connection
backend be_sni
  mode tcp
  server fe_sni unix@{fe_sni} weight 1 send-proxy

frontend fe_sni
  bind unix@{fe_sni} ssl crt {default_cert} crt-list {cert_list} accept-proxy
  mode http
",
        listen = layout.listen,
        https_port = layout.https_port,
        sni_map = layout.file(SNI_PASSTHROUGH_MAP),
        tcp_map = layout.file(TCP_BACKEND_MAP),
        fe_sni = fe_sni.display(),
        default_cert = layout.default_certificate.display(),
        cert_list = layout.file(CERT_LIST),
    );
    push_http_routing(out, layout, EDGE_REENCRYPT_BACKEND_MAP, false);

    let _ = write!(
        out,
        "# TLS without SNI: the default certificate only
backend be_no_sni
  mode tcp
  server fe_no_sni unix@{fe_no_sni} weight 1 send-proxy

frontend fe_no_sni
  bind unix@{fe_no_sni} ssl crt {default_cert} accept-proxy
  mode http
",
        fe_no_sni = fe_no_sni.display(),
        default_cert = layout.default_certificate.display(),
    );
    push_http_routing(out, layout, EDGE_REENCRYPT_BACKEND_MAP, false);

    out.push_str(
        "# no route matched: 503
backend openshift_default
  mode http

",
    );
}

fn push_backend(out: &mut String, route: &BenchRoute, layout: &Layout, options: &Options) {
    let name = backend_name(route);
    let checks = options.health_checks && route.pods.len() > 1;
    if route.termination == Termination::Passthrough {
        let _ = write!(
            out,
            "backend {name}\n  mode tcp\n  balance source\n  hash-type consistent\n  timeout check 5000ms\n"
        );
        for pod in &route.pods {
            let id = server_id(route, pod.name.as_str(), pod.ip, pod.port);
            let _ = write!(out, "  server {id} {}:{} weight {}", pod.ip, pod.port, server_weight(route));
            out.push_str(if checks { " check inter 5000ms\n" } else { "\n" });
        }
        out.push('\n');
        return;
    }
    let balance = options.http_balance;
    let _ = write!(
        out,
        "backend {name}
  mode http
  option redispatch
  option forwardfor
  balance {balance}
  timeout check 5000ms
  http-request add-header X-Forwarded-Host %[req.hdr(host)]
  http-request add-header X-Forwarded-Port %[dst_port]
  http-request add-header X-Forwarded-Proto http if !{{ ssl_fc }}
  http-request add-header X-Forwarded-Proto https if {{ ssl_fc }}
  http-request add-header X-Forwarded-Proto-Version h2 if {{ ssl_fc_alpn -i h2 }}
  http-request add-header Forwarded for=%[src];host=%[req.hdr(host)];proto=%[req.hdr(X-Forwarded-Proto)]
"
    );
    if options.cookies {
        let secure = if route.termination == Termination::Http { "" } else { " secure" };
        let _ = writeln!(
            out,
            "  cookie {} insert indirect nocache httponly{secure} attr SameSite=None",
            opaque_id(&route.key())
        );
    }
    for pod in &route.pods {
        let id = server_id(route, pod.name.as_str(), pod.ip, pod.port);
        let _ = write!(out, "  server {id} {}:{}", pod.ip, pod.port);
        if options.cookies {
            let _ = write!(out, " cookie {}", opaque_id(&id));
        }
        let _ = write!(out, " weight {}", server_weight(route));
        if route.termination == Termination::Reencrypt {
            let ca = route.certificates.as_ref().and_then(|tls| tls.destination_ca.as_ref());
            match ca {
                Some(_) => {
                    let ca_file = layout.dir.join(format!("cacerts/{}.pem", route.key()));
                    let _ = write!(
                        out,
                        " ssl verifyhost {}.{}.svc verify required ca-file {}",
                        route.service,
                        route.namespace,
                        ca_file.display()
                    );
                }
                None => out.push_str(" ssl verify none"),
            }
        }
        out.push_str(if checks { " check inter 5000ms\n" } else { "\n" });
    }
    out.push('\n');
}

/// A server's weight: with one service every endpoint gets 1 (docs/route-semantics.md); with alternate backends the
/// per-endpoint weights are scaled so the largest is 256 (the bench's routes have one service each). Weight 1
/// matters for `balance random`: HAProxy builds a consistent-hash tree with 16 nodes per unit of weight, so
/// `weight 256` costs about 200 KB per server (8 GB at 10,000 routes x 4 pods).
fn server_weight(_route: &BenchRoute) -> u32 {
    1
}

/// `pod:<pod>:<service>:<port name>:<ip>:<port>`.
fn server_id(route: &BenchRoute, pod: &str, ip: Ipv4Addr, port: u16) -> String {
    format!("pod:{pod}:{}:http:{ip}:{port}", route.service)
}

#[cfg(test)]
mod tests {
    use super::super::pki::self_signed_certificate;
    use super::super::routes::{Certificates, Pod};
    use super::*;

    fn pods() -> Vec<Pod> {
        (0..4).map(|i| Pod { name: format!("pod-{i}"), ip: Ipv4Addr::new(127, 0, 0, 11 + i), port: 8080 }).collect()
    }

    fn layout(dir: &Path) -> Layout {
        Layout {
            dir: dir.to_path_buf(),
            listen: Ipv4Addr::LOCALHOST,
            http_port: 18080,
            https_port: 18443,
            default_certificate: dir.join("default.pem"),
        }
    }

    fn mixed_set(tls: Option<Certificates>) -> RouteSet {
        let mut set = RouteSet::http(3, &pods());
        let mut api = BenchRoute::http("api", &pods());
        api.host = set.routes[0].host.clone();
        api.path = "/api".into();
        set.routes.push(api);
        for (name, termination) in
            [("edge", Termination::Edge), ("reen", Termination::Reencrypt), ("pass", Termination::Passthrough)]
        {
            let mut route = BenchRoute::http(name, &pods());
            route.termination = termination;
            route.certificates = if termination == Termination::Passthrough { None } else { tls.clone() };
            set.routes.push(route);
        }
        set
    }

    #[test]
    fn regexes_follow_the_segment_boundary_rules() {
        assert_eq!(route_regex("A.example.com", ""), r"^a\.example\.com\.?(:[0-9]+)?(/.*)?$");
        assert_eq!(route_regex("a.example.com", "/sub"), r"^a\.example\.com\.?(:[0-9]+)?/sub(/.*)?$");
        assert_eq!(route_regex("a.example.com", "/sub/"), r"^a\.example\.com\.?(:[0-9]+)?/sub/.*$");
        assert_eq!(route_regex("a.example.com", "/v1.0"), r"^a\.example\.com\.?(:[0-9]+)?/v1\.0(/.*)?$");
    }

    #[test]
    fn maps_route_each_termination_and_put_the_longest_path_first() {
        let dir = Path::new("/tmp/layout");
        let rendered = render(&mixed_set(None), &layout(dir), &Options::default());
        let map = |name: &str| {
            rendered.maps.iter().find(|(n, _)| *n == name).map(|(_, text)| text.clone()).unwrap_or_default()
        };
        let http = map(HTTP_BACKEND_MAP);
        let lines: Vec<&str> = http.lines().collect();
        assert_eq!(lines.len(), 4);
        let api = lines.iter().position(|l| l.ends_with("be_http:bench:api")).expect("api line");
        let root = lines.iter().position(|l| l.ends_with("be_http:bench:r00000")).expect("root line");
        assert!(api < root, "{http}");
        assert!(map(EDGE_REENCRYPT_BACKEND_MAP)
            .contains(r"^edge\.bench\.example\.com\.?(:[0-9]+)?(/.*)?$ be_edge_http:bench:edge"));
        assert!(map(EDGE_REENCRYPT_BACKEND_MAP).contains(" be_secure:bench:reen"));
        assert_eq!(map(SNI_PASSTHROUGH_MAP), "^pass\\.bench\\.example\\.com$ 1\n");
        assert_eq!(map(TCP_BACKEND_MAP), "^pass\\.bench\\.example\\.com$ be_tcp:bench:pass\n");
    }

    #[test]
    fn backends_carry_balance_cookies_forwarded_headers_and_weighted_servers() {
        let dir = Path::new("/tmp/layout");
        let config = render(&mixed_set(None), &layout(dir), &Options::default()).config;
        assert!(config.contains("backend be_http:bench:r00001\n  mode http\n"));
        assert!(config.contains("  balance random\n"));
        assert!(
            config.contains("  cookie ") && config.contains(" insert indirect nocache httponly attr SameSite=None\n")
        );
        assert!(config.contains("  server pod:pod-0:r00001:http:127.0.0.11:8080 127.0.0.11:8080 cookie "));
        assert!(config.contains(" weight 1 check inter 5000ms\n"));
        assert!(config.contains("http-request add-header Forwarded for=%[src];host=%[req.hdr(host)]"));
        assert!(config.contains("backend be_tcp:bench:pass\n  mode tcp\n  balance source\n  hash-type consistent\n"));
        assert!(config.contains("use_backend be_sni if sni"));
        assert!(config.contains("server fe_sni unix@/tmp/layout/run/fe_sni.sock weight 1 send-proxy"));
        assert!(config.contains(" ssl verify none"));

        let plain = Options { cookies: false, health_checks: false, ..Options::default() };
        let config = render(&mixed_set(None), &layout(dir), &plain).config;
        assert!(!config.contains("cookie"));
        assert!(!config.contains("check inter"));
        assert!(config.contains("127.0.0.11:8080 weight 1\n"));
    }

    /// The generated configuration, with real certificates, passes `haproxy -c` (skipped where haproxy or openssl
    /// is missing; `cargo xtask setup` installs both).
    #[test]
    fn haproxy_accepts_the_generated_configuration() {
        let installed = |tool: &str| std::process::Command::new(tool).arg("version").output().is_ok();
        if !installed("openssl") || std::process::Command::new("haproxy").arg("-v").output().is_err() {
            eprintln!("skipped: haproxy or openssl not installed");
            return;
        }
        let dir = std::env::temp_dir().join(format!("xtask-haproxy-check-{}", std::process::id()));
        let (certificate, key) = self_signed_certificate(&dir.join("tls"), "bench.example.com").expect("certificate");
        let layout = layout(&dir);
        std::fs::write(&layout.default_certificate, format!("{certificate}{key}")).expect("default cert");
        let tls = Certificates {
            certificate: certificate.clone(),
            key,
            ca_certificate: Some(certificate.clone()),
            destination_ca: Some(certificate),
        };
        let plain = Options { cookies: false, health_checks: false, tls_resumption: false, ..Options::default() };
        for options in [Options::default(), plain] {
            let config = write(&mixed_set(Some(tls.clone())), &layout, &options).expect("write");
            let out =
                std::process::Command::new("haproxy").arg("-c").arg("-f").arg(&config).output().expect("haproxy -c");
            assert!(
                out.status.success(),
                "haproxy -c: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
