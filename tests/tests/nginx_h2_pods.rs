//! Real nginx pods spoken to over HTTP/2 (TLS `listen ssl http2` picked by ALPN for reencrypt, cleartext
//! `listen http2` for appProtocol h2c): nginx answers 400 to a request carrying both `:authority` and a Host
//! header, so these pods answer 200 only when the router sends the client's host as `:authority` alone, as
//! HAProxy does. Each pod answers with the host and protocol it saw.

use std::net::{SocketAddr, TcpListener as StdListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use router::config::Settings;
use router_tests::cli::{curl_http, curl_https};
use router_tests::eventually;
use router_tests::manifests::{route, service, service_with_app_protocol, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::{PemDir, TestCa};
use router_tests::start_tls_router;

/// An nginx process of this test, stopped (by its PID) when dropped.
struct Nginx {
    child: Child,
    tls: SocketAddr,
    h2c: SocketAddr,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_loopback_port() -> SocketAddr {
    let listener = StdListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local addr")
}

/// Starts nginx in `dir`: TLS HTTP/2 (ALPN h2, http/1.1) with `cert`/`key`, and cleartext HTTP/2; both answer
/// `host=<Host as nginx saw it> proto=<protocol>`.
async fn start_nginx(dir: &Path, cert: &Path, key: &Path) -> Nginx {
    let (tls, h2c) = (free_loopback_port(), free_loopback_port());
    let d = dir.display();
    let answer = r#"location / { return 200 "host=$http_host proto=$server_protocol\n"; }"#;
    let config = format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 64; }}\nhttp {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  \
         proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  \
         scgi_temp_path {d}/scgi;\n  server {{\n    listen {tls} ssl http2;\n    ssl_certificate {cert};\n    \
         ssl_certificate_key {key};\n    {answer}\n  }}\n  server {{\n    listen {h2c} http2;\n    {answer}\n  }}\n}}\n",
        cert = cert.display(),
        key = key.display(),
    );
    let config_file = dir.join("nginx.conf");
    std::fs::write(&config_file, config).expect("writing nginx.conf");
    let child = Command::new("nginx")
        .arg("-p")
        .arg(dir)
        .arg("-e")
        .arg(dir.join("error.log"))
        .arg("-c")
        .arg(&config_file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting nginx (Debian package nginx)");
    let nginx = Nginx { child, tls, h2c };
    eventually("nginx listening", Duration::from_secs(10), || async move {
        let up = tokio::net::TcpStream::connect(tls).await.is_ok() && tokio::net::TcpStream::connect(h2c).await.is_ok();
        up.then_some(())
    })
    .await;
    nginx
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_pods_over_http2_get_the_clients_host_as_authority_alone() {
    let (pod_ca, front_ca) = (TestCa::new("pod-ca"), TestCa::new("front-ca"));
    let pod_leaf = pod_ca.leaf(&["pod.internal"]);
    let front = front_ca.leaf(&["re.example.com"]);
    let files = PemDir::new();
    let cert = files.write("pod.pem", &pod_leaf.chain_pem());
    let key = files.write("pod.key", &pod_leaf.key_pem);
    let ca_file = files.write("front-ca.pem", &front_ca.cert_pem);
    let nginx = start_nginx(files.path(), &cert, &key).await;

    let reencrypt = RouteSpec {
        tls: Some(
            RouteTls::reencrypt()
                .with_certificate(&front.cert_pem, &front.key_pem)
                .with_destination_ca(&pod_ca.cert_pem),
        ),
        ..RouteSpec::new("ns", "tlspod", "re.example.com", "tlspod")
    };
    let dir = ManifestDir::new();
    let yaml = [
        service("ns", "tlspod", &[nginx.tls]),
        reencrypt.yaml(),
        service_with_app_protocol("ns", "h2cpod", &[nginx.h2c], "h2c"),
        route("ns", "h2cpod", "h2c.example.com", "/", "h2cpod"),
    ];
    dir.write("all.yaml", &yaml.concat());
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;

    let ca_arg = ca_file.to_str().expect("path");
    for client_version in ["--http1.1", "--http2"] {
        let reply = curl_https(https, "re.example.com", "/", &["--cacert", ca_arg, client_version]).await;
        assert_eq!((reply.exit_code, reply.status), (0, 200), "{client_version}: {} {}", reply.body, reply.stderr);
        let expected = format!("host=re.example.com:{} proto=HTTP/2.0\n", https.port());
        assert_eq!(reply.body, expected, "{client_version}");
    }
    let reply = curl_http(router.http_addr, "h2c.example.com", "/", &[]).await;
    assert_eq!((reply.exit_code, reply.status), (0, 200), "{} {}", reply.body, reply.stderr);
    assert_eq!(reply.body, format!("host=h2c.example.com:{} proto=HTTP/2.0\n", router.http_addr.port()));
    router.shutdown().await;
    drop(nginx);
}
