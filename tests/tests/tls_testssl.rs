//! testssl.sh (Debian's package) against :443, with the default TLS settings and with ROUTER_CIPHERS=modern:
//! protocols (-p), cipher categories (-s), forward secrecy (-f), server preferences (-P) and every
//! vulnerability check (-U), read from its flat JSON output. Any finding of severity LOW or above fails the
//! test, except findings about the test's own certificate (a private CA, no OCSP or CRL URI, a long validity) and
//! about HTTP headers the test pod sends, which say nothing about the router's TLS. `--nodns none`: no DNS
//! lookups; the scan goes to 127.0.0.1 only. The server-defaults (-S), header (-h) and client simulation (-c)
//! groups are left out to keep the run short (about a minute each on this machine).

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use router::config::Settings;
use router_tests::backend::TestBackend;
use router_tests::manifests::{service, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::TestCa;
use router_tests::start_tls_router;
use tokio::process::Command;

/// Finding ids that describe the certificate or the pod's HTTP answer rather than the router's TLS.
const NOT_ABOUT_TLS: &[&str] =
    &["cert", "intermediate_cert", "chain_of_trust", "OCSP", "DNS_CAArecord", "HSTS", "HPKP", "banner", "cookie"];

/// Severities that fail the test.
const FAILING: &[&str] = &["LOW", "MEDIUM", "HIGH", "CRITICAL"];

/// Runs testssl.sh against `port` on 127.0.0.1 with SNI `host`; returns its findings (id, severity, finding).
async fn testssl(port: u16, host: &str, json: &Path) -> Vec<(String, String, String)> {
    let target = format!("{host}:{port}");
    let mut command = Command::new("testssl");
    command
        .args(["--quiet", "--color", "0", "--warnings", "off", "--nodns", "none", "--ip", "127.0.0.1"])
        .args(["--connect-timeout", "5", "--openssl-timeout", "5", "--sneaky"])
        .args(["-p", "-s", "-f", "-P", "-U"])
        .arg("--jsonfile")
        .arg(json)
        .arg(&target)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let started = Instant::now();
    let output = tokio::time::timeout(Duration::from_secs(600), command.output())
        .await
        .expect("testssl ends within 10 minutes")
        .expect("run testssl (Debian package testssl.sh; cargo xtask setup installs it)");
    eprintln!("testssl {target}: {:?}, exit {:?}", started.elapsed(), output.status.code());
    let text = std::fs::read_to_string(json)
        .unwrap_or_else(|e| panic!("testssl wrote no JSON ({e}): {}", String::from_utf8_lossy(&output.stdout)));
    let entries: Vec<serde_json::Value> = serde_json::from_str(&text).expect("testssl JSON is an array");
    let field = |entry: &serde_json::Value, name: &str| entry[name].as_str().unwrap_or_default().to_string();
    let findings: Vec<_> =
        entries.iter().map(|e| (field(e, "id"), field(e, "severity"), field(e, "finding"))).collect();
    // The findings table (`--nocapture` shows it).
    for (id, severity, finding) in findings.iter().filter(|(_, severity, _)| severity != "DEBUG") {
        eprintln!("| {id} | {severity} | {finding} |");
    }
    findings
}

/// The findings that fail the test.
fn weak(findings: &[(String, String, String)]) -> Vec<String> {
    findings
        .iter()
        .filter(|(id, severity, _)| {
            FAILING.contains(&severity.as_str()) && !NOT_ABOUT_TLS.iter().any(|prefix| id.starts_with(prefix))
        })
        .map(|(id, severity, finding)| format!("{id} [{severity}]: {finding}"))
        .collect()
}

async fn scan(ciphers: Option<&str>) -> Vec<(String, String, String)> {
    let web = TestBackend::start("web").await;
    let ca = TestCa::new("testssl-ca");
    let leaf = ca.leaf(&["scan.example.com"]);
    let dir = ManifestDir::new();
    let route = RouteSpec {
        tls: Some(RouteTls::edge().with_certificate(&leaf.cert_pem, &leaf.key_pem)),
        ..RouteSpec::new("ns", "scan", "scan.example.com", "web")
    };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), route.yaml()].concat());
    let mut settings = Settings::for_loopback(dir.path());
    if let Some(ciphers) = ciphers {
        settings.tls.ciphers = ciphers.to_string();
    }
    let (router, https) = start_tls_router(settings).await;
    let json = dir.path().join("testssl.json");
    let findings = testssl(https.port(), "scan.example.com", &json).await;
    router.shutdown().await;
    findings
}

fn assert_offered(findings: &[(String, String, String)], id: &str, offered: bool) {
    let (_, _, finding) = findings.iter().find(|(i, _, _)| i == id).unwrap_or_else(|| panic!("no {id} finding"));
    assert_eq!(finding.starts_with("offered"), offered, "{id}: {finding}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn testssl_finds_nothing_weak_with_the_default_settings() {
    let findings = scan(None).await;
    assert!(findings.len() > 20, "testssl ran its checks: {findings:?}");
    let weak = weak(&findings);
    assert!(weak.is_empty(), "weak findings:\n{}", weak.join("\n"));
    for id in ["SSLv2", "SSLv3", "TLS1", "TLS1_1"] {
        assert_offered(&findings, id, false);
    }
    assert_offered(&findings, "TLS1_2", true);
    assert_offered(&findings, "TLS1_3", true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn testssl_finds_nothing_weak_with_modern_ciphers() {
    let findings = scan(Some("modern")).await;
    let weak = weak(&findings);
    assert!(weak.is_empty(), "weak findings:\n{}", weak.join("\n"));
    for id in ["SSLv2", "SSLv3", "TLS1", "TLS1_1", "TLS1_2"] {
        assert_offered(&findings, id, false);
    }
    assert_offered(&findings, "TLS1_3", true);
}
